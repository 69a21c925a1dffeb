// The file of a unix socket a gRPC server of ours serves: the checks before binding, the move of
// the bound socket to its path, the identity that tells later whether the file at the path is
// still the one we bound, and its removal. Two processes may serve one path at once (a rolling
// update starts the new pod while the old one stops; the kubelet deletes plugin sockets when it
// restarts), so none of this acts by name alone:
//  - gRPC unlinks whatever socket is at the address it binds, before binding and again when the
//    server shuts down. The server therefore binds a private name in the same directory
//    (private_bind_path) and the socket is renamed to its path (BoundSocketFile::publish), so
//    gRPC's unlinks only ever meet that private name.
//  - The rename replaces a socket at the path in one step: the process that starts last serves.
//  - The file is removed only while it is still the inode we bound, checked and unlinked under
//    an flock on the directory that our processes take around every rename and removal, and
//    before the server closes its socket (until then no new file can get the inode number).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"

namespace shim {

// `path` can be served: it fits a unix socket address, and nothing but a socket (stale or served,
// it will be replaced) is at the path.
xpu::Status check_socket_path(const std::filesystem::path& path);

// A name no other process binds, in the directory of `path`; it starts with a dot, so the
// kubelet's plugin watcher ignores it (plugins_registry) until it is renamed to `path`.
xpu::Result<std::filesystem::path> private_bind_path(const std::filesystem::path& path);

// A process accepts connections on the socket at `path` (false: no socket, or a stale one).
bool socket_is_served(const std::filesystem::path& path);

// A connection to the socket at `path`, made without waiting: a listener whose queue is full is an
// error here, so the calling thread stays free for a stop signal.
xpu::Result<xpu::UniqueFd> connect_to_socket(const std::filesystem::path& path);

class BoundSocketFile {
 public:
  enum class State {
    kOurs,      // the path holds the socket we bound
    kGone,      // nothing at the path (the kubelet deleted it when it restarted)
    kReplaced,  // another file: a socket another process bound since, or one left by a crash
  };

  // Renames the socket just bound at `bound_at` to `path`, replacing the socket there (the
  // stale one of an earlier run, or the served one of the process this one replaces).
  static xpu::Result<BoundSocketFile> publish(const std::filesystem::path& bound_at,
                                              std::filesystem::path path);

  State state() const;
  bool present() const { return state() == State::kOurs; }
  // Removes the file if it is still ours; never a socket someone else bound at the path since.
  void remove_if_ours() const;

  const std::filesystem::path& path() const { return path_; }

 private:
  BoundSocketFile(std::filesystem::path path, dev_t device, ino_t inode)
      : path_(std::move(path)), device_(device), inode_(inode) {}

  std::filesystem::path path_;
  dev_t device_;
  ino_t inode_;
};

}  // namespace shim
