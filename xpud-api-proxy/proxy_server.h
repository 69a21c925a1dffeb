// The read-only xpud API endpoint for containers: listens on a socket, speaks enough of the bus
// protocol to each client that ordinary D-Bus clients (sd-bus, sdbus-c++, libdbus, busctl)
// connect to it as to a bus, and forwards the reads of xpud's API to xpud over the system bus.
//
// Why a proxy in front of the system bus rather than the system bus itself: the bus authorises by
// uid, and uid 0 in a container is uid 0 on the host; on the system bus it could start units
// (systemd1), power the node off (login1) or take xpud's name while xpud restarts. Here a client
// reaches xpud's reads and nothing else, and the proxy itself is an unprivileged system user, so
// xpud's bus policy refuses it every root-only method even if this allow-list had a hole.
//
// One thread: an sd-event loop owns the listening socket, the upstream connection and every
// session. Upstream calls are asynchronous; no client can block another.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/unique_fd.h"
#include "xpud-api-proxy/client_session.h"
#include "xpud-api-proxy/sd_handles.h"

namespace xpu::api_proxy {

struct ProxyLimits {
  unsigned max_clients = 64;
  unsigned max_pending_calls_per_client = 32;  // forwarded calls awaiting xpud's reply
  std::uint64_t max_queued_messages = 512;     // a client that stops reading is dropped
  std::chrono::microseconds upstream_call_timeout = std::chrono::seconds(25);
};

class ProxyServer {
 public:
  // `listen_socket` is bound and listening; `upstream_address` nullopt means the system bus.
  // Throws std::runtime_error naming what failed.
  ProxyServer(UniqueFd listen_socket, const std::optional<std::string>& upstream_address,
              ProxyLimits limits);
  ~ProxyServer();
  ProxyServer(const ProxyServer&) = delete;
  ProxyServer& operator=(const ProxyServer&) = delete;

  // Runs until SIGTERM/SIGINT (returns 0) or until the upstream bus is lost (returns 1).
  int run();

  // --- for ClientSession ---
  const ProxyLimits& limits() const { return limits_; }
  const std::string& xpud_owner() const { return xpud_owner_; }
  const std::string& bus_id() const { return bus_id_; }
  // Forwards `call` to xpud; the reply goes back through the session with this id.
  // Returns a negative errno when the call could not be sent.
  int forward(std::uint64_t session_id, sd_bus_message* call);
  // For Route::ForwardIfHostAllows: asks xpud for ClusterReconfigureAllowed and forwards `call`
  // only when it is true (else the session refuses it). `peer` names the client in the log.
  int forward_if_host_allows(std::uint64_t session_id, sd_bus_message* call,
                             const std::string& peer);
  void session_closed();

 private:
  static int on_accept(sd_event_source*, int fd, std::uint32_t revents, void* userdata);
  static int on_xpud_signal(sd_bus_message* message, void* userdata, sd_bus_error*);
  static int on_owner_changed(sd_bus_message* message, void* userdata, sd_bus_error*);
  static int on_reap(sd_event_source*, void* userdata);
  static int on_status_timer(sd_event_source*, std::uint64_t, void* userdata);
  void accept_clients();
  void relay_to_clients(sd_bus_message* signal, const std::string& sender);
  void update_status();

  ProxyLimits limits_;
  UniqueFd listen_socket_;
  EventPtr event_;
  FlushingBusPtr upstream_;
  EventSourcePtr accept_source_;
  EventSourcePtr reap_source_;
  EventSourcePtr status_timer_;
  SlotPtr owner_match_;
  SlotPtr signal_match_;
  std::string xpud_owner_;  // unique name owning xpud's bus name, "" when none
  std::string bus_id_;
  std::uint64_t next_session_id_ = 1;
  std::uint64_t refused_clients_ = 0;
  std::map<std::uint64_t, std::unique_ptr<ClientSession>> sessions_;
  std::string last_status_;
};

}  // namespace xpu::api_proxy
