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
// One thread: an sd-event loop owns the listening sockets, the upstream connection and every
// session. Upstream calls are asynchronous; no client can block another. Two sockets: the
// read-only one, open to every local user, and the SR-IOV one, root's only, which serves the reads
// and the one write (api_filter.h). Losing the system bus (dbus-daemon restarted, or it dropped
// us) is survived: clients are told xpud is gone, and the proxy connects again.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "common/xpud_signals.h"
#include "xpud-api-proxy/client_session.h"
#include "xpud-api-proxy/sd_handles.h"
#include "xpud-api-proxy/uid_budget.h"

namespace xpu::api_proxy {

// Every figure a client's use of the proxy is bounded by. The socket is open to every local user,
// so each is sized for a hostile one; root's clients (the cluster's pods, xpuctl) keep room
// whatever the other uids do. Why each default: xpud-api-proxy/README.md, "Limits".
struct ProxyLimits {
  unsigned max_clients = 128;
  unsigned max_clients_per_uid = 16;  // for a uid other than 0
  // Calls forwarded to xpud and not yet answered. The proxy is one connection of the system bus,
  // which answers LimitsExceeded past 128 outstanding replies per connection
  // (max_replies_per_connection), so all clients together stay below that.
  unsigned max_pending_calls = 96;
  unsigned max_pending_calls_per_uid = 32;  // for a uid other than 0
  unsigned max_pending_calls_per_client = 16;
  // A client's message, header and body; the system bus takes 32 MiB (max_message_size), the
  // largest call of xpud's API a few KiB. Larger: LimitsExceeded, never read into memory.
  std::uint64_t max_message_bytes = 128 * 1024;
  std::size_t max_output_bytes_per_client = 2 * 1024 * 1024;  // waiting for a client to read
  std::size_t max_output_bytes_of_others = 16 * 1024 * 1024;  // the same, all uids but 0 together
  std::uint64_t max_queued_messages = 512;  // sd-bus's own queue for a client, in messages
  // From connecting to Hello (dbus-daemon's auth_timeout is 5 s too), and from Hello to a call.
  std::chrono::microseconds hello_timeout = std::chrono::seconds(5);
  std::chrono::microseconds first_call_timeout = std::chrono::seconds(5);
  std::chrono::microseconds upstream_call_timeout = std::chrono::seconds(25);
  // Waits between tries to reach the system bus again after losing it: doubling up to the last.
  std::chrono::microseconds reconnect_first_delay = std::chrono::milliseconds(100);
  std::chrono::microseconds reconnect_max_delay = std::chrono::seconds(5);

  // The share of connections and of calls kept for root: a quarter.
  unsigned clients_kept_for_root() const { return max_clients / 4; }
  unsigned pending_calls_kept_for_root() const { return max_pending_calls / 4; }
};

// A socket the proxy serves, and which kind it is.
struct ListeningSocket {
  UniqueFd fd;
  ApiSocket kind = ApiSocket::ReadOnly;
  std::string name;  // for logs: its path, or systemd's name for it
};

// Why a call was not forwarded: the D-Bus error to answer with, and its text.
struct CallRefusal {
  const char* error_name;
  std::string text;
};

class ProxyServer {
 public:
  // Every socket in `sockets` is bound and listening; `upstream_address` nullopt means the system
  // bus. Throws std::runtime_error naming what failed.
  ProxyServer(std::vector<ListeningSocket> sockets, std::optional<std::string> upstream_address,
              ProxyLimits limits);
  ~ProxyServer();
  ProxyServer(const ProxyServer&) = delete;
  ProxyServer& operator=(const ProxyServer&) = delete;

  // Runs until SIGTERM/SIGINT (returns 0); a lost system bus is reconnected, not fatal.
  int run();

  // --- for ClientSession ---
  const ProxyLimits& limits() const { return limits_; }
  const std::string& xpud_owner() const { return xpud_owner_; }
  const std::string& bus_id() const { return bus_id_; }
  OutputPool& output_pool_of_others() { return output_of_others_; }
  void count_timed_out() { ++timed_out_clients_; }
  // Forwards `call` to xpud; the reply goes back through `session` (found again by its id, as
  // it may be gone by then). Says why when the call could not be sent.
  std::optional<CallRefusal> forward(const ClientSession& session, sd_bus_message* call);
  // For Route::ForwardIfHostAllows: asks xpud for ClusterReconfigureAllowed and forwards `call`
  // only when it is true (else the session refuses it).
  std::optional<CallRefusal> forward_if_host_allows(const ClientSession& session,
                                                    sd_bus_message* call);
  void session_closed();

 private:
  struct Listener {
    ListeningSocket socket;
    EventSourcePtr source;
  };
  static int on_accept(sd_event_source*, int fd, std::uint32_t revents, void* userdata);
  static int on_xpud_signal(sd_bus_message* message, void* userdata, sd_bus_error*);
  static int on_owner_changed(sd_bus_message* message, void* userdata, sd_bus_error*);
  static int on_upstream_disconnected(sd_bus_message* message, void* userdata, sd_bus_error*);
  static int on_reconnect(sd_event_source*, std::uint64_t, void* userdata);
  static int on_reap(sd_event_source*, void* userdata);
  static int on_status_timer(sd_event_source*, std::uint64_t, void* userdata);
  void connect_upstream();
  void drop_upstream();
  void accept_clients(Listener& listener);
  bool close_hung_up_clients();
  void reap_closed_sessions();
  void count_refused_client(const std::string& peer, const std::string& socket,
                            const std::string& why);
  std::optional<CallRefusal> take_call_budget(const ClientSession& session);
  void relay_to_clients(sd_bus_message* signal, const std::string& sender);
  void count_dropped_signal(const SignalOrigin& origin, const std::string& why);
  void set_xpud_owner(const std::string& owner);
  void update_status();

  ProxyLimits limits_;
  std::optional<std::string> upstream_address_;
  std::vector<Listener> listeners_;
  EventPtr event_;
  FlushingBusPtr upstream_;
  EventSourcePtr reap_source_;
  EventSourcePtr status_timer_;
  EventSourcePtr reconnect_timer_;
  SlotPtr owner_match_;
  SlotPtr signal_match_;
  SlotPtr disconnect_match_;
  std::string xpud_owner_;  // unique name owning xpud's bus name, "" when none
  std::string bus_id_;
  std::chrono::microseconds reconnect_delay_{};
  std::uint64_t next_session_id_ = 1;
  std::uint64_t refused_clients_ = 0;
  std::uint64_t timed_out_clients_ = 0;
  std::uint64_t upstream_losses_ = 0;
  std::uint64_t dropped_signals_ = 0;  // NameOwnerChanged or xpud's signals, sent by someone else
  std::chrono::steady_clock::time_point last_refusal_warning_{};
  UidBudget connections_;
  UidBudget pending_calls_;
  OutputPool output_of_others_;
  std::map<std::uint64_t, std::unique_ptr<ClientSession>> sessions_;
  std::string last_status_;
};

}  // namespace xpu::api_proxy
