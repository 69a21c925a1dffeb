// The file of a unix socket a gRPC server of ours binds: the checks before binding, and the
// identity that tells later whether the file at the path is still the one we bound (the kubelet
// deletes plugin sockets when it restarts; someone else may bind the path since).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "common/result.h"

namespace shim {

// Makes `path` ready to bind: it must fit a unix socket address, and a socket left there by an
// earlier run (nobody serves it any more) is removed. Anything else at the path is refused.
xpu::Status clear_socket_path(const std::filesystem::path& path);

class BoundSocketFile {
 public:
  // The socket now at `path`, right after binding it.
  static xpu::Result<BoundSocketFile> record(std::filesystem::path path);

  // The file at the path is still the socket we bound.
  bool present() const;
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
