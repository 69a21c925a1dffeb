#include "k8s-shim/device_plugin/kubelet_connector.h"

#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "k8s-shim/device_plugin/device_plugin_options.h"
#include "k8s-shim/device_plugin/kubelet_registration.h"
#include "k8s-shim/socket_file.h"

namespace shim {
namespace {

constexpr std::uint32_t kWatchMask = IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM |
                                     IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

// The server this one replaced (predecessor_watch.h): a plugin of ours stops serving within
// milliseconds of the rename (its directory watch, then its streams' 100 ms check). One that
// keeps serving past this is not ours to wait for.
constexpr std::chrono::seconds kPredecessorWait{10};
// How often to look whether it has stopped meanwhile.
constexpr std::chrono::milliseconds kPredecessorPoll{50};
// From its connections' end to the Register: the kubelet has had the end of its stream (the
// stream's status goes out before the server closes its connections) and its goroutine needs
// only to take a lock to let go of the path.
constexpr std::chrono::milliseconds kPredecessorSettle{200};

}  // namespace

KubeletConnector::KubeletConnector(Options options)
    : options_(std::move(options)),
      kubelet_socket_(options_.plugin_dir / std::string(kKubeletSocketName)),
      inotify_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
  if (!inotify_.valid())
    throw std::runtime_error(std::string("inotify_init1 failed: ") + std::strerror(errno));
  ensure_watch();
}

KubeletConnector::~KubeletConnector() {
  stop();
}

std::optional<KubeletConnector::FileId> KubeletConnector::file_id(
    const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino, st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
}

void KubeletConnector::ensure_watch() {
  if (watch_ >= 0) return;
  watch_ = ::inotify_add_watch(inotify_.get(), options_.plugin_dir.c_str(), kWatchMask);
  if (watch_ < 0) {
    if (!logged_missing_dir_)
      spdlog::warn("cannot watch plugin directory {} ({}); waiting for it",
                   options_.plugin_dir.string(), std::strerror(errno));
    logged_missing_dir_ = true;
    return;
  }
  if (logged_missing_dir_)
    spdlog::info("watching plugin directory {}", options_.plugin_dir.string());
  logged_missing_dir_ = false;
}

void KubeletConnector::register_again_now(const char* why,
                                          const std::optional<FileId>& unless_registered_with) {
  bool any = false;
  for (auto& [name, endpoint] : endpoints_) {
    if (unless_registered_with && endpoint.registered &&
        endpoint.registered_with == unless_registered_with)
      continue;
    any = any || endpoint.registered;
    endpoint.registered_with.reset();
    endpoint.registered = false;
    endpoint.next_attempt = Clock::time_point{};
    endpoint.backoff = Clock::duration{};
    endpoint.failures = 0;
  }
  if (any) spdlog::info("{}: registering again", why);
}

void KubeletConnector::handle_directory_events() {
  alignas(inotify_event) char buffer[4096];
  while (true) {
    ssize_t n = ::read(inotify_.get(), buffer, sizeof buffer);
    if (n <= 0) break;
    for (char* p = buffer; p < buffer + n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(p);
      p += sizeof(inotify_event) + event->len;
      const std::string_view name =
          event->len > 0 ? std::string_view(event->name) : std::string_view();
      if (event->mask & IN_Q_OVERFLOW) {
        // Not with the kubelet that serves now: it has us, and would refuse a second Register.
        register_again_now("missed plugin directory events", file_id(kubelet_socket_));
      } else if (event->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
        if (event->wd == watch_) {
          ::inotify_rm_watch(inotify_.get(), watch_);
          watch_ = -1;
          register_again_now("the plugin directory was removed");
        }
      } else if (name == kKubeletSocketName) {
        // Either way the registration is gone, unless it was already made with the kubelet.sock
        // that exists now (events are read after the fact).
        register_again_now((event->mask & (IN_CREATE | IN_MOVED_TO))
                               ? "kubelet.sock was created (kubelet restart)"
                               : "kubelet.sock was removed (kubelet stopped)",
                           file_id(kubelet_socket_));
      }
      // Our own sockets disappearing is noticed by reconcile(), which checks every socket.
    }
  }
}

void KubeletConnector::retry_later(Endpoint& endpoint) {
  endpoint.inherited = false;
  ++endpoint.failures;
  endpoint.backoff = endpoint.backoff == Clock::duration{}
                         ? options_.first_retry
                         : std::min<Clock::duration>(endpoint.backoff * 2, options_.max_retry);
  endpoint.next_attempt = Clock::now() + endpoint.backoff;
}

void KubeletConnector::reconcile(const std::vector<std::shared_ptr<ResourceFeed>>& feeds,
                                 bool may_register) {
  ensure_watch();
  for (const auto& feed : feeds) {
    if (endpoints_.contains(feed->resource_name())) continue;
    Endpoint endpoint;
    endpoint.feed = feed;
    endpoints_.emplace(feed->resource_name(), std::move(endpoint));
  }
  const auto kubelet = file_id(kubelet_socket_);
  if (!kubelet && !logged_missing_kubelet_)
    spdlog::info("waiting for the kubelet: {} does not exist yet", kubelet_socket_.string());
  logged_missing_kubelet_ = !kubelet;

  next_deadline_.reset();
  for (auto& [name, endpoint] : endpoints_) {
    reconcile_endpoint(endpoint, kubelet, may_register);
    const bool waiting = !endpoint.server || (!endpoint.registered && kubelet && may_register);
    if (waiting && endpoint.next_attempt > Clock::now())
      next_deadline_ =
          std::min(next_deadline_.value_or(Clock::time_point::max()), endpoint.next_attempt);
  }
}

bool KubeletConnector::stopping() const {
  if (options_.stop_fd < 0) return false;
  pollfd fd{options_.stop_fd, POLLIN, 0};
  return ::poll(&fd, 1, 0) > 0 && (fd.revents & POLLIN) != 0;
}

void KubeletConnector::drop_lost_server(Endpoint& endpoint) {
  const std::string& resource = endpoint.feed->resource_name();
  const std::filesystem::path& path = endpoint.server->socket_path();
  switch (endpoint.server->socket_state()) {
    case BoundSocketFile::State::kOurs:
      return;
    case BoundSocketFile::State::kGone:
      spdlog::warn("{}: socket {} was removed (kubelet restart?); serving on a new one", resource,
                   path.string());
      break;
    case BoundSocketFile::State::kReplaced:
      // Taking it back would only make the two processes replace each other's socket, each
      // time registering again, until one of them stops.
      if (socket_is_served(path)) {
        spdlog::warn(
            "{}: another process serves {} now (a newer device plugin?); this one stops serving "
            "it, and serves it again only once the path is free",
            resource, path.string());
        endpoint.displaced = true;
      } else {
        spdlog::warn("{}: socket {} was replaced by one nobody serves; serving on a new one",
                     resource, path.string());
      }
      break;
  }
  endpoint.server.reset();
  endpoint.registered = false;
  endpoint.next_attempt = Clock::time_point{};
  endpoint.backoff = Clock::duration{};
}

std::string KubeletConnector::socket_name(const Endpoint& endpoint) {
  const std::string& primary = endpoint.feed->socket_name();
  if (endpoint.spare == 0) return primary;
  const std::string stem =
      primary.ends_with(".sock") ? primary.substr(0, primary.size() - 5) : primary;
  return stem + "-spare" + std::to_string(endpoint.spare) + ".sock";
}

void KubeletConnector::reconcile_endpoint(Endpoint& endpoint, const std::optional<FileId>& kubelet,
                                          bool may_register) {
  const std::string& resource = endpoint.feed->resource_name();
  if (endpoint.server) drop_lost_server(endpoint);
  if (!endpoint.server) {
    // A socket bound now would outlive the stop that is about to run only by luck.
    if (stopping() || Clock::now() < endpoint.next_attempt) return;
    if (endpoint.spare != 0 && kubelet != endpoint.refused_by) {
      // A kubelet that started since has no stale connection: the usual name is usable again.
      spdlog::info("{}: a new kubelet; serving on {} again", resource,
                   endpoint.feed->socket_name());
      endpoint.spare = 0;
    }
    const std::filesystem::path path = options_.plugin_dir / socket_name(endpoint);
    if (endpoint.displaced) {
      if (socket_is_served(path)) return;
      spdlog::info("{}: {} is free again; serving it", resource, path.string());
      endpoint.displaced = false;
    }
    // Made before the rename replaces the socket: it reaches whoever serves the path now.
    std::optional<PredecessorWatch> predecessor = PredecessorWatch::connect(path);
    auto server = PluginServer::start(path, endpoint.feed, options_.memory_unit, options_.cdi,
                                      options_.hooks);
    if (!server) {
      if (endpoint.failures == 0) spdlog::error("{}: {}; retrying", resource, server.error());
      retry_later(endpoint);
      return;
    }
    endpoint.server = std::move(*server);
    endpoint.registered = false;
    endpoint.first_attempt.reset();
    endpoint.failures = 0;
    endpoint.backoff = Clock::duration{};
    endpoint.next_attempt = Clock::time_point{};
    endpoint.predecessor = std::move(predecessor);
    endpoint.inherited = endpoint.predecessor.has_value();
    if (endpoint.predecessor) {
      endpoint.predecessor_deadline = Clock::now() + kPredecessorWait;
      spdlog::info(
          "{}: serving on {} in place of another process's server; registering once that one has "
          "stopped",
          resource, endpoint.server->socket_path().string());
    } else {
      spdlog::info("{}: serving on {}", resource, endpoint.server->socket_path().string());
    }
  }
  if (endpoint.registered && kubelet != endpoint.registered_with)
    endpoint.registered = false;  // kubelet.sock was replaced while we were not looking
  if (endpoint.registered || !kubelet || !may_register || Clock::now() < endpoint.next_attempt ||
      stopping())
    return;
  if (endpoint.predecessor && !predecessor_gone(endpoint)) return;

  const std::string name = socket_name(endpoint);
  auto connection = connect_to_kubelet();
  if (!connection) {
    if (endpoint.failures == 0)
      spdlog::warn("{}: no Register: {}; retrying with back-off", resource, connection.error());
    else
      spdlog::debug("{}: no Register: {} (attempt {})", resource, connection.error(),
                    endpoint.failures + 1);
    retry_later(endpoint);
    return;
  }
  const FileId called = connection->kubelet;
  // A stream opened from the first call on is this kubelet acting on one of the calls; streams
  // from before prove nothing (they may be a previous kubelet's).
  if (!endpoint.first_attempt || endpoint.first_attempt->kubelet != called) {
    endpoint.first_attempt = Endpoint::FirstAttempt{endpoint.server->streams_opened(), called};
  } else if (endpoint.server->streams_opened() > endpoint.first_attempt->streams) {
    // The stream came after the failed call had returned: the kubelet took that call.
    spdlog::info(
        "{}: the kubelet opened ListAndWatch on {} after an earlier Register failed on our side, "
        "so it is registered",
        resource, name);
    mark_registered(endpoint, called);
    return;
  }
  const RegisterResult result =
      register_with_kubelet(std::move(connection->socket), kubelet_socket_, resource, name,
                            options_.register_timeout, options_.stop_fd);
  switch (result.outcome) {
    case RegisterOutcome::kCancelled:
      spdlog::info("{}: {}", resource, result.error);
      return;
    case RegisterOutcome::kAccepted:
      spdlog::info("{}: registered with the kubelet (endpoint {})", resource, name);
      break;
    case RegisterOutcome::kFailed:
    case RegisterOutcome::kEndpointTaken:
      if (endpoint.server->streams_opened() > endpoint.first_attempt->streams) {
        // The kubelet accepted a call and is watching this server, but its answer did not reach
        // us (it came after our timeout): asking again would only be refused.
        spdlog::info(
            "{}: {}; but the kubelet opened ListAndWatch on {} for it, so it is registered",
            resource, result.error, name);
        break;
      }
      if (result.outcome == RegisterOutcome::kEndpointTaken) {
        move_to_spare(endpoint, called, result.error);
        if (endpoint.next_attempt <= Clock::now())
          reconcile_endpoint(endpoint, kubelet, may_register);
        return;
      }
      if (endpoint.failures == 0)
        spdlog::warn("{}: {}; retrying with back-off", resource, result.error);
      else
        spdlog::debug("{}: {} (attempt {})", resource, result.error, endpoint.failures + 1);
      retry_later(endpoint);
      return;
  }
  mark_registered(endpoint, called);
}

xpu::Result<KubeletConnector::KubeletConnection> KubeletConnector::connect_to_kubelet() const {
  const auto before = file_id(kubelet_socket_);
  if (!before) return xpu::Error{"kubelet.sock is gone"};
  auto socket = connect_to_socket(kubelet_socket_);
  if (!socket) return xpu::Error{socket.error()};
  // The same file before and after connect(): the connection reached that file's listener (a
  // replacement in between would show a new identity after).
  if (file_id(kubelet_socket_) != before)
    return xpu::Error{"kubelet.sock was replaced while connecting"};
  return KubeletConnection{std::move(*socket), *before};
}

bool KubeletConnector::predecessor_gone(Endpoint& endpoint) {
  const std::string& resource = endpoint.feed->resource_name();
  const std::string path = endpoint.server->socket_path().string();
  const Clock::time_point now = Clock::now();
  if (endpoint.predecessor->closed()) {
    spdlog::info("{}: the server that {} replaced has stopped; registering", resource, path);
    endpoint.predecessor.reset();
    endpoint.next_attempt = now + kPredecessorSettle;
    return false;
  }
  if (now >= endpoint.predecessor_deadline) {
    spdlog::warn(
        "{}: the server that {} replaced still keeps its connections after {} s; registering "
        "anyway (a 1.37 kubelet may refuse it while that server's stream is open)",
        resource, path, kPredecessorWait.count());
    endpoint.predecessor.reset();
    return true;
  }
  endpoint.next_attempt = now + kPredecessorPoll;
  return false;
}

bool KubeletConnector::serving() const {
  bool any = false;
  for (const auto& [name, endpoint] : endpoints_) {
    if (endpoint.displaced) continue;
    if (!endpoint.registered) return false;
    any = true;
  }
  return any;
}

bool KubeletConnector::displaced() const {
  return !endpoints_.empty() &&
         std::all_of(endpoints_.begin(), endpoints_.end(),
                     [](const auto& entry) { return entry.second.displaced; });
}

bool KubeletConnector::node_served() const {
  return !endpoints_.empty() &&
         std::all_of(endpoints_.begin(), endpoints_.end(), [](const auto& entry) {
           const Endpoint& endpoint = entry.second;
           return endpoint.registered || endpoint.displaced ||
                  (endpoint.server && endpoint.inherited);
         });
}

bool KubeletConnector::deciding() const {
  return std::any_of(endpoints_.begin(), endpoints_.end(), [](const auto& entry) {
    return entry.second.server && entry.second.server->decisions_under_way() > 0;
  });
}

void KubeletConnector::mark_registered(Endpoint& endpoint, const FileId& kubelet) {
  endpoint.registered = true;
  endpoint.inherited = false;
  endpoint.first_attempt.reset();
  // Exactly the kubelet.sock the call went to, whatever is at the path now: if it was replaced
  // since, the directory event that follows registers again with the new one; if it was not,
  // that event (read after the fact) finds this one and leaves the registration alone, since a
  // 1.37 kubelet refuses a second Register and its refusal loses track of this connection (see
  // kubelet_connector.h).
  endpoint.registered_with = kubelet;
  endpoint.failures = 0;
  endpoint.backoff = Clock::duration{};
}

void KubeletConnector::move_to_spare(Endpoint& endpoint, const std::optional<FileId>& kubelet,
                                     const std::string& error) {
  const std::string& resource = endpoint.feed->resource_name();
  if (endpoint.spare >= kMaxSpare) {
    if (endpoint.failures == 0)
      spdlog::error(
          "{}: {}; the kubelet refuses every spare socket name too; retrying with "
          "back-off (restarting the kubelet clears this)",
          resource, error);
    retry_later(endpoint);
    return;
  }
  const std::string refused = socket_name(endpoint);
  ++endpoint.spare;
  spdlog::warn(
      "{}: {}; the kubelet keeps a connection to {} that it will not let go (a plugin there "
      "stopped after a refused second registration), so this plugin serves on {} until the "
      "kubelet restarts",
      resource, error, refused, socket_name(endpoint));
  endpoint.refused_by = kubelet;
  endpoint.server.reset();  // removes the refused socket: nothing will ever call it
  endpoint.registered = false;
  endpoint.failures = 0;
  endpoint.backoff = Clock::duration{};
  endpoint.next_attempt = Clock::time_point{};
}

void KubeletConnector::stop() {
  for (auto& [name, endpoint] : endpoints_) {
    if (!endpoint.server) continue;
    endpoint.server.reset();
    spdlog::info("{}: stopped serving", name);
  }
}

}  // namespace shim
