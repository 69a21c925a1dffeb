// Keeps every resource served and registered with the kubelet, whatever the kubelet does:
//  - serves first (one PluginServer per resource), then registers;
//  - waits for the plugin directory and kubelet.sock to exist instead of failing;
//  - watches the directory (inotify): a new kubelet.sock (kubelet restart) means registering
//    again at once; a plugin socket that disappeared (the kubelet deletes them on start) means
//    serving on a fresh socket and registering again;
//  - a plugin socket another process put at the path and serves (a rolling update's new pod)
//    is left to it: this one stops serving that resource, and serves again only once the path
//    is free or holds a socket nobody serves;
//  - a plugin that replaced a served socket (that new pod) registers only once the server it
//    replaced has stopped, and the kubelet has let go of it (predecessor_watch.h);
//  - once the stop signal is pending (Options::stop_fd readable), binds nothing new, registers
//    no more, and cancels a Register in flight;
//  - backs off on failures (250 ms doubling to 30 s), and never re-registers a healthy
//    registration on its own, so it does not flap;
//  - registers each server with each kubelet once. Since 1.37 (kubernetes PR 135437) the kubelet
//    keys a plugin by its socket path and refuses a second Register for a path it is connected
//    to ("device plugin already connected"), and the refusal also drops its own record of the
//    live connection, so that when this server later stops the kubelet never lets go of the
//    path: every later Register there is refused until the kubelet restarts. So a Register whose
//    answer was lost counts as done once the kubelet opened ListAndWatch here since this
//    server's first Register with it (the kubelet opens the stream on a goroutine of its own
//    after Register returns, so it may come after the call's failure, even after the retry
//    began). The call goes over a connection made first to a kubelet.sock whose identity was the
//    same before and after connect(), so the kubelet that took it is known exactly: a kubelet.sock
//    replaced during the call (a kubelet restarting right after accepting) is registered with
//    again, and one that only looks new because its event was read late is not;
//  - if the kubelet refuses the endpoint anyway (left so by an earlier plugin), serves on a spare
//    name (kunlunxin-xpu-spare1.sock, ...) instead, and goes back to the usual name when a new
//    kubelet starts.
// Owned and driven by one thread (the role's loop): reconcile() after events and at
// next_deadline(). Register calls block that thread for at most the register timeout, or until
// the stop signal (the call itself runs on a thread of its own, which that thread cancels and
// joins); ListAndWatch updates do not go through it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "k8s-shim/device_plugin/plugin_server.h"
#include "k8s-shim/device_plugin/predecessor_watch.h"
#include "k8s-shim/device_plugin/resource_feed.h"

namespace shim {

class KubeletConnector {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    std::filesystem::path plugin_dir;
    MemoryUnit memory_unit = MemoryUnit::MiB;
    CdiMode cdi = CdiMode::kAuto;  // --cdi
    // Every server's service gets them (DevicePluginService::DecisionHooks).
    DevicePluginService::DecisionHooks hooks;
    std::chrono::milliseconds register_timeout{5000};
    Clock::duration first_retry = std::chrono::milliseconds(250);
    Clock::duration max_retry = std::chrono::seconds(30);
    int stop_fd = -1;  // readable once the role must stop (the stop signal's fd); -1: never
  };

  explicit KubeletConnector(Options options);
  ~KubeletConnector();
  KubeletConnector(const KubeletConnector&) = delete;
  KubeletConnector& operator=(const KubeletConnector&) = delete;

  // Readable when the plugin directory changed; then call handle_directory_events().
  int watch_fd() const { return inotify_.get(); }
  void handle_directory_events();
  // Serves new resources, replaces vanished sockets, and, when `may_register`, registers where
  // needed.
  void reconcile(const std::vector<std::shared_ptr<ResourceFeed>>& feeds, bool may_register);
  // When reconcile() has a retry due; nullopt when only an event can make progress.
  std::optional<Clock::time_point> next_deadline() const { return next_deadline_; }
  // Whether the kubelet takes the plugin's cards: at least one resource registered, and every
  // resource this process serves registered (a resource another process serves, a rolling
  // update's other pod, is that one's to count).
  bool serving() const;
  // Whether another process serves every resource's socket path (a rolling update's new pod,
  // started before this one stops): the node is served without this process.
  bool displaced() const;
  // Whether the node's cards are served, by this process or across a hand-over: each resource is
  // registered here, or another process serves its path (displaced), or this process took the
  // path over from a server that still served it and is about to register (predecessor_watch.h).
  // What the node's ready label says: during a rolling update whose pods overlap, neither pod
  // takes it away from the other.
  bool node_served() const;
  // Whether a server is answering a GetPreferredAllocation or Allocate call now.
  bool deciding() const;
  // Stops every server and removes its socket.
  void stop();

 private:
  // Which file a path names. The change time is part of it because a new kubelet.sock can get
  // the inode number of the one just deleted.
  struct FileId {
    dev_t device = 0;
    ino_t inode = 0;
    std::int64_t change_sec = 0;
    std::int64_t change_nsec = 0;
    bool operator==(const FileId&) const = default;
  };
  // Spare socket names an endpoint tries after the kubelet refused its usual one.
  static constexpr unsigned kMaxSpare = 4;

  struct Endpoint {
    std::shared_ptr<ResourceFeed> feed;
    unsigned spare = 0;                // 0: the feed's socket name; n: its n-th spare name
    std::optional<FileId> refused_by;  // kubelet.sock that refused the usual name
    std::unique_ptr<PluginServer> server;
    // Another process serves the socket path; not taken back while it does.
    bool displaced = false;
    // The server this one replaced at the path, for as long as it may still serve: no Register
    // before it has stopped (predecessor_watch.h), or before the deadline.
    std::optional<PredecessorWatch> predecessor;
    Clock::time_point predecessor_deadline{};
    // This server took the path over from one that served it, and has not registered since, nor
    // failed to: the node is served meanwhile (node_served()).
    bool inherited = false;
    bool registered = false;
    std::optional<FileId> registered_with;  // kubelet.sock we registered with
    // The server's stream count at its first Register with kubelet.sock `kubelet`, for as long
    // as it is not registered: a stream opened since is that kubelet acting on one of the calls.
    // Reset with each new server (its count starts at 0); a new kubelet.sock replaces it.
    struct FirstAttempt {
      unsigned streams = 0;
      std::optional<FileId> kubelet;
    };
    std::optional<FirstAttempt> first_attempt;
    Clock::time_point next_attempt{};
    Clock::duration backoff{};
    unsigned failures = 0;
  };

  // A connection to kubelet.sock, and the file it reached.
  struct KubeletConnection {
    xpu::UniqueFd socket;
    FileId kubelet;
  };

  static std::optional<FileId> file_id(const std::filesystem::path& path);
  xpu::Result<KubeletConnection> connect_to_kubelet() const;
  void ensure_watch();
  void retry_later(Endpoint& endpoint);
  // Forgets every registration, except those made with `unless_registered_with`.
  void register_again_now(const char* why,
                          const std::optional<FileId>& unless_registered_with = std::nullopt);
  void reconcile_endpoint(Endpoint& endpoint, const std::optional<FileId>& kubelet,
                          bool may_register);
  static std::string socket_name(const Endpoint& endpoint);
  // After the kubelet behind kubelet.sock `kubelet` took a Register.
  void mark_registered(Endpoint& endpoint, const FileId& kubelet);
  void move_to_spare(Endpoint& endpoint, const std::optional<FileId>& kubelet,
                     const std::string& error);
  // Whether the server `endpoint` replaced has stopped and the kubelet has had time to let go of
  // it, or it is past waiting for; when not, sets when to look again.
  static bool predecessor_gone(Endpoint& endpoint);
  // Drops the server whose socket file is gone or replaced.
  static void drop_lost_server(Endpoint& endpoint);
  bool stopping() const;

  const Options options_;
  const std::filesystem::path kubelet_socket_;
  xpu::UniqueFd inotify_;
  int watch_ = -1;
  std::map<std::string, Endpoint> endpoints_;  // by resource name
  std::optional<Clock::time_point> next_deadline_;
  bool logged_missing_dir_ = false;
  bool logged_missing_kubelet_ = false;
};

}  // namespace shim
