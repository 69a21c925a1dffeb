#include "xpud-api-proxy/proxy_server.h"

#include <poll.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX sigset_t, not in <csignal>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/names.h"
#include "common/xpud_signals.h"
#include "xpud-api-proxy/api_filter.h"
#include "xpud-api-proxy/bus_errors.h"

namespace xpu::api_proxy {
namespace {

using bus_errors::kFailed;
using bus_errors::kLimitsExceeded;

std::runtime_error failure(const std::string& what, int negative_errno) {
  return std::runtime_error(what + ": " + std::strerror(-negative_errno));
}

std::optional<ucred> credentials_of(int fd) {
  ucred cred{};
  socklen_t length = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) < 0) return std::nullopt;
  return cred;
}

SignalOrigin origin_of(sd_bus_message* message) {
  auto text = [](const char* s) { return s ? std::string_view(s) : std::string_view(); };
  return SignalOrigin{
      text(sd_bus_message_get_sender(message)), text(sd_bus_message_get_destination(message)),
      text(sd_bus_message_get_path(message)), text(sd_bus_message_get_interface(message)),
      text(sd_bus_message_get_member(message))};
}

std::string describe_peer(const std::optional<ucred>& cred) {
  if (!cred) return "unknown peer";
  return "pid " + std::to_string(cred->pid) + " uid " + std::to_string(cred->uid);
}

// Keeps the original call alive until xpud answers; freed with the upstream call's slot, which
// also gives the call's place in the budget back (whether the session is still there or not).
struct PendingForward {
  ProxyServer* server;
  UidBudget* budget;
  std::uint64_t session_id;
  std::optional<uid_t> uid;
  MessagePtr call;
  std::map<std::uint64_t, std::unique_ptr<ClientSession>>* sessions;
};

// Hands `pending` to an asynchronous call's slot: floating, freed (and its budget given back)
// when the reply, the timeout or the end of the upstream bus fires it.
void hand_to_slot(sd_bus_slot* slot, std::unique_ptr<PendingForward> pending) {
  sd_bus_slot_set_destroy_callback(slot, [](void* userdata) {
    auto* p = static_cast<PendingForward*>(userdata);
    p->budget->give_back(p->uid);
    delete p;
  });
  (void)pending.release();  // the slot's now
  sd_bus_slot_set_floating(slot, 1);
  sd_bus_slot_unref(slot);
}

std::unique_ptr<PendingForward> make_pending(
    ProxyServer* server, UidBudget& budget, const ClientSession& session, sd_bus_message* call,
    std::map<std::uint64_t, std::unique_ptr<ClientSession>>& sessions) {
  return std::make_unique<PendingForward>(
      PendingForward{server, &budget, session.id(), session.uid(),
                     MessagePtr(sd_bus_message_ref(call)), &sessions});
}

ClientSession* find_session(const PendingForward& pending) {
  auto it = pending.sessions->find(pending.session_id);
  return it == pending.sessions->end() ? nullptr : it->second.get();
}

}  // namespace

ProxyServer::ProxyServer(std::vector<ListeningSocket> sockets,
                         std::optional<std::string> upstream_address, ProxyLimits limits)
    : limits_(limits),
      upstream_address_(std::move(upstream_address)),
      reconnect_delay_(limits.reconnect_first_delay),
      connections_(BudgetLimits{limits.max_clients, limits.max_clients_per_uid,
                                limits.clients_kept_for_root()},
                   "connections"),
      pending_calls_(BudgetLimits{limits.max_pending_calls, limits.max_pending_calls_per_uid,
                                  limits.pending_calls_kept_for_root()},
                     "calls to xpud outstanding"),
      output_of_others_{limits.max_output_bytes_of_others, 0} {
  sd_event* event = nullptr;
  int r = sd_event_new(&event);
  if (r < 0) throw failure("sd_event_new", r);
  event_.reset(event);

  // At start the bus must be there (the unit orders the proxy after dbus.socket): failing here
  // says so at once. Once running, a lost bus is reconnected (on_upstream_disconnected).
  connect_upstream();

  sd_event_source* source = nullptr;
  // Filled before any source points into it: the vector does not move afterwards.
  for (auto& socket : sockets) listeners_.push_back(Listener{std::move(socket), nullptr});
  for (auto& listener : listeners_) {
    if ((r = sd_event_add_io(event, &source, listener.socket.fd.get(), EPOLLIN,
                             &ProxyServer::on_accept, this)) < 0)
      throw failure("watching the socket " + listener.socket.name, r);
    listener.source.reset(source);
  }
  if ((r = sd_event_add_defer(event, &source, &ProxyServer::on_reap, this)) < 0)
    throw failure("sd_event_add_defer", r);
  reap_source_.reset(source);
  sd_event_source_set_enabled(source, SD_EVENT_OFF);
  if ((r = sd_event_add_time_relative(event, &source, CLOCK_MONOTONIC, 1000000, 0,
                                      &ProxyServer::on_status_timer, this)) < 0)
    throw failure("sd_event_add_time_relative", r);
  status_timer_.reset(source);
  sd_event_source_set_enabled(source, SD_EVENT_ON);
  if ((r = sd_event_add_time_relative(event, &source, CLOCK_MONOTONIC, 0, 0,
                                      &ProxyServer::on_reconnect, this)) < 0)
    throw failure("sd_event_add_time_relative", r);
  reconnect_timer_.reset(source);
  sd_event_source_set_enabled(source, SD_EVENT_OFF);

  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  sigprocmask(SIG_BLOCK, &stop, nullptr);
  sd_event_add_signal(event, nullptr, SIGTERM, nullptr, nullptr);
  sd_event_add_signal(event, nullptr, SIGINT, nullptr, nullptr);
  // Pings the watchdog whenever WatchdogSec= is set on the unit.
  sd_event_set_watchdog(event, 1);
}

ProxyServer::~ProxyServer() {
  // Sessions hold their buses attached to the loop: drop them before the loop goes.
  sessions_.clear();
  drop_upstream();
}

void ProxyServer::connect_upstream() {
  sd_bus* bus = nullptr;
  int r = 0;
  if (upstream_address_) {
    if ((r = sd_bus_new(&bus)) < 0) throw failure("sd_bus_new", r);
    upstream_.reset(bus);
    if ((r = sd_bus_set_address(bus, upstream_address_->c_str())) < 0)
      throw failure("bus address " + *upstream_address_, r);
    sd_bus_set_bus_client(bus, 1);
    if ((r = sd_bus_start(bus)) < 0) throw failure("connecting to " + *upstream_address_, r);
  } else {
    if ((r = sd_bus_open_system(&bus)) < 0) throw failure("connecting to the system bus", r);
    upstream_.reset(bus);
  }
  sd_bus_set_exit_on_disconnect(bus, 0);
  if ((r = sd_bus_attach_event(bus, event_.get(), 0)) < 0) throw failure("sd_bus_attach_event", r);

  sd_id128_t id{};
  if (sd_bus_get_bus_id(bus, &id) >= 0) {
    char text[SD_ID128_STRING_MAX];
    bus_id_ = sd_id128_to_string(id, text);
  } else if (bus_id_.empty()) {
    bus_id_ = "00000000000000000000000000000000";
  }

  sd_bus_slot* slot = nullptr;
  if ((r = sd_bus_match_signal(bus, &slot, nullptr, nullptr,
                               std::string(names::bus::kLocalInterface).c_str(), "Disconnected",
                               &ProxyServer::on_upstream_disconnected, this)) < 0)
    throw failure("watching for the end of the bus connection", r);
  disconnect_match_.reset(slot);
  // Follow the owner of xpud's name before asking for it, so no change falls in between.
  const std::string xpud_name(names::kBusName);
  const std::string driver(names::bus::kDriverName);
  const std::string driver_path(names::bus::kDriverPath);
  const std::string owner_rule =
      "type='signal',sender='" + driver + "',path='" + driver_path + "',interface='" + driver +
      "',member='" + std::string(names::bus::kNameOwnerChanged) + "',arg0='" + xpud_name + "'";
  if ((r = sd_bus_add_match(bus, &slot, owner_rule.c_str(), &ProxyServer::on_owner_changed, this)) <
      0)
    throw failure("subscribing to NameOwnerChanged", r);
  owner_match_.reset(slot);
  // Both rules only choose what the bus broadcasts to the proxy: a signal addressed to it passes
  // them whoever sent it (common/xpud_signals.h), so on_owner_changed and on_xpud_signal check
  // each message's sender, destination and member themselves.
  const std::string signal_rule = "type='signal',sender='" + xpud_name + "'";
  if ((r = sd_bus_add_match(bus, &slot, signal_rule.c_str(), &ProxyServer::on_xpud_signal, this)) <
      0)
    throw failure("subscribing to xpud's signals", r);
  signal_match_.reset(slot);

  BusError error;
  sd_bus_message* reply = nullptr;
  r = sd_bus_call_method(bus, driver.c_str(), driver_path.c_str(), driver.c_str(),
                         std::string(names::bus::kGetNameOwner).c_str(), error.get(), &reply, "s",
                         xpud_name.c_str());
  MessagePtr owned_reply(reply);
  const char* owner = nullptr;
  std::string found;
  if (r >= 0 && sd_bus_message_read(reply, "s", &owner) >= 0 && owner) found = owner;
  if (found.empty()) spdlog::info("xpud is not on the bus yet");
  set_xpud_owner(found);
}

void ProxyServer::drop_upstream() {
  // The slots hold the bus: they go first.
  disconnect_match_.reset();
  signal_match_.reset();
  owner_match_.reset();
  if (upstream_) {
    sd_bus_detach_event(upstream_.get());
    // Nothing queued is worth flushing to a bus that is gone.
    sd_bus_close(upstream_.get());
  }
  upstream_.reset();
}

// sd-bus has answered every call still waiting with an error by now ("Connection terminated");
// the bus object itself is dropped outside its own callback, by the reconnect timer.
int ProxyServer::on_upstream_disconnected(sd_bus_message*, void* userdata, sd_bus_error*) {
  auto* self = static_cast<ProxyServer*>(userdata);
  ++self->upstream_losses_;
  spdlog::warn(
      "lost the connection to the system bus; clients are told xpud is gone, and the "
      "proxy connects again");
  self->set_xpud_owner("");
  self->reconnect_delay_ = self->limits_.reconnect_first_delay;
  sd_event_source_set_time_relative(self->reconnect_timer_.get(), 0);
  sd_event_source_set_enabled(self->reconnect_timer_.get(), SD_EVENT_ONESHOT);
  return 0;
}

int ProxyServer::on_reconnect(sd_event_source* source, std::uint64_t, void* userdata) {
  auto* self = static_cast<ProxyServer*>(userdata);
  self->drop_upstream();
  try {
    self->connect_upstream();
    spdlog::info("connected to the system bus again");
    self->update_status();
  } catch (const std::exception& e) {
    self->drop_upstream();
    spdlog::debug("cannot reach the system bus yet ({}); next try in {} ms", e.what(),
                  self->reconnect_delay_.count() / 1000);
    sd_event_source_set_time_relative(source,
                                      static_cast<std::uint64_t>(self->reconnect_delay_.count()));
    sd_event_source_set_enabled(source, SD_EVENT_ONESHOT);
    self->reconnect_delay_ =
        std::min(self->reconnect_delay_ * 2, self->limits_.reconnect_max_delay);
  }
  return 0;
}

void ProxyServer::set_xpud_owner(const std::string& owner) {
  if (owner == xpud_owner_) return;
  const std::string old_owner = xpud_owner_;
  xpud_owner_ = owner;
  spdlog::info("xpud is {}", xpud_owner_.empty() ? "gone from the bus" : "at " + xpud_owner_);
  // The bus's own NameOwnerChanged tells clients of changes it sees; these are the ones the
  // proxy learns otherwise (a lost bus, a new connection's first answer).
  for (auto& [id, session] : sessions_) session->announce_owner_change(old_owner, xpud_owner_);
}

int ProxyServer::run() {
  update_status();
  sd_notify(0, "READY=1");
  const int r = sd_event_loop(event_.get());
  sd_notify(0, "STOPPING=1");
  if (r < 0) {
    spdlog::error("event loop failed: {}", std::strerror(-r));
    return 1;
  }
  return 0;
}

int ProxyServer::on_accept(sd_event_source* source, int, std::uint32_t, void* userdata) {
  auto* self = static_cast<ProxyServer*>(userdata);
  for (auto& listener : self->listeners_)
    if (listener.source.get() == source) self->accept_clients(listener);
  return 0;
}

void ProxyServer::accept_clients(Listener& listener) {
  for (;;) {
    UniqueFd client(
        ::accept4(listener.socket.fd.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!client.valid()) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
        spdlog::warn("accept on {} failed: {}", listener.socket.name, std::strerror(errno));
      return;
    }
    const auto credentials = credentials_of(client.get());
    std::optional<uid_t> uid;
    if (credentials) uid = credentials->uid;
    const std::string peer = describe_peer(credentials);
    auto refusal = connections_.take(uid);
    if (refusal && close_hung_up_clients()) refusal = connections_.take(uid);
    if (refusal) {
      // Closed at once: the clients already connected (the node's shim) keep working, and root
      // keeps its share whatever the other uids hold.
      count_refused_client(peer, listener.socket.name, *refusal);
      continue;
    }
    const std::uint64_t id = next_session_id_++;
    try {
      auto session = std::make_unique<ClientSession>(*this, id, std::move(client), uid, peer,
                                                     listener.socket.kind, event_.get());
      spdlog::debug("client {} connected ({}) on {}", id, peer, listener.socket.name);
      sessions_.emplace(id, std::move(session));
    } catch (const std::exception& e) {
      // Out of descriptors or memory: counted and logged as a refusal.
      connections_.give_back(uid);
      count_refused_client(peer, listener.socket.name,
                           std::string("cannot set up its connection: ") + e.what());
    }
  }
}

// One warning a minute at most, so that a connection storm does not flood the journal; the
// count is in the unit's status line.
void ProxyServer::count_refused_client(const std::string& peer, const std::string& socket,
                                       const std::string& why) {
  ++refused_clients_;
  const auto now = std::chrono::steady_clock::now();
  const bool warn = now - last_refusal_warning_ >= std::chrono::minutes(1);
  if (warn) last_refusal_warning_ = now;
  spdlog::log(warn ? spdlog::level::warn : spdlog::level::debug,
              "refused a client ({}) on {}: {} ({} refused so far; one warning a minute)", peer,
              socket, why, refused_clients_);
}

std::optional<CallRefusal> ProxyServer::take_call_budget(const ClientSession& session) {
  if (!upstream_)
    return CallRefusal{kFailed, "xpud's bus is not connected (the proxy is connecting again)"};
  if (auto refusal = pending_calls_.take(session.uid()))
    return CallRefusal{kLimitsExceeded, "xpud's API socket is busy: " + *refusal};
  return std::nullopt;
}

std::optional<CallRefusal> ProxyServer::forward(const ClientSession& session,
                                                sd_bus_message* call) {
  if (auto refusal = take_call_budget(session)) return refusal;
  auto pending = make_pending(this, pending_calls_, session, call, sessions_);
  auto refuse = [&](int r) -> std::optional<CallRefusal> {
    pending_calls_.give_back(session.uid());
    return CallRefusal{kFailed, std::string("cannot forward to xpud: ") + std::strerror(-r)};
  };
  sd_bus_message* raw = nullptr;
  int r = sd_bus_message_new_method_call(
      upstream_.get(), &raw, std::string(names::kBusName).c_str(), sd_bus_message_get_path(call),
      sd_bus_message_get_interface(call), sd_bus_message_get_member(call));
  if (r < 0) return refuse(r);
  MessagePtr upstream_call(raw);
  if ((r = sd_bus_message_rewind(call, 1)) < 0 ||
      (r = sd_bus_message_copy(upstream_call.get(), call, 1)) < 0)
    return refuse(r);
  auto on_reply = [](sd_bus_message* reply, void* userdata, sd_bus_error*) -> int {
    auto* p = static_cast<PendingForward*>(userdata);
    if (ClientSession* session = find_session(*p)) {
      const char* sender = sd_bus_message_get_sender(reply);
      session->deliver_reply(p->call.get(), reply, sender ? sender : "");
    }
    return 1;
  };
  sd_bus_slot* slot = nullptr;
  r = sd_bus_call_async(upstream_.get(), &slot, upstream_call.get(), on_reply, pending.get(),
                        static_cast<std::uint64_t>(limits_.upstream_call_timeout.count()));
  if (r < 0) return refuse(r);
  hand_to_slot(slot, std::move(pending));
  return std::nullopt;
}

std::optional<CallRefusal> ProxyServer::forward_if_host_allows(const ClientSession& session,
                                                               sd_bus_message* call) {
  if (auto refusal = take_call_budget(session)) return refusal;
  auto pending = make_pending(this, pending_calls_, session, call, sessions_);
  // Asked at every call rather than cached: the answer follows a reload of xpud's
  // configuration at once, and a write this rare can afford the extra round trip.
  auto on_answer = [](sd_bus_message* reply, void* userdata, sd_bus_error*) -> int {
    auto* p = static_cast<PendingForward*>(userdata);
    ClientSession* session = find_session(*p);
    if (!session) return 1;
    int allowed = 0;
    std::optional<std::string> refusal;
    if (sd_bus_message_is_method_error(reply, nullptr)) {
      const sd_bus_error* error = sd_bus_message_get_error(reply);
      refusal = std::string("cannot learn from xpud whether the host allows it: ") +
                (error && error->message ? error->message : "no answer");
    } else if (sd_bus_message_enter_container(reply, 'v', "b") < 0 ||
               sd_bus_message_read(reply, "b", &allowed) < 0) {
      refusal = "xpud's ClusterReconfigureAllowed is not a boolean";
    } else {
      refusal = cluster_write_refusal(allowed != 0, session->uid());
    }
    const std::string what = std::string(names::kManagerInterface) + "." +
                             std::string(names::member::kConfigureVirtualFunctions);
    if (refusal) {
      spdlog::warn("refused {} from {}: {}", what, session->peer(), *refusal);
      session->refuse_forward(p->call.get(), *refusal);
      return 1;
    }
    spdlog::info("forwarding {} from {}: the host allows the cluster to change SR-IOV counts", what,
                 session->peer());
    // The question's place in the budget is given back when this slot goes; the call takes one
    // of its own.
    if (auto failed = p->server->forward(*session, p->call.get())) {
      session->refuse_forward(p->call.get(), failed->text, failed->error_name);
    }
    return 1;
  };
  sd_bus_slot* slot = nullptr;
  const std::string manager(names::kManagerInterface);
  const std::string property(names::property::kClusterReconfigureAllowed);
  const int r =
      sd_bus_call_method_async(upstream_.get(), &slot, std::string(names::kBusName).c_str(),
                               std::string(names::kManagerPath).c_str(),
                               std::string(names::bus::kPropertiesInterface).c_str(), "Get",
                               on_answer, pending.get(), "ss", manager.c_str(), property.c_str());
  if (r < 0) {
    pending_calls_.give_back(session.uid());
    return CallRefusal{kFailed, std::string("cannot ask xpud: ") + std::strerror(-r)};
  }
  hand_to_slot(slot, std::move(pending));
  return std::nullopt;
}

// Only the bus driver's broadcast moves xpud's owner: any peer of the system bus can send the
// proxy a NameOwnerChanged of its own (common/xpud_signals.h), and one that the proxy believed
// would make that peer xpud for every client, and xpud's own signals dropped.
int ProxyServer::on_owner_changed(sd_bus_message* message, void* userdata, sd_bus_error*) {
  auto* self = static_cast<ProxyServer*>(userdata);
  const SignalOrigin origin = origin_of(message);
  if (auto why = why_not_driver_owner_change(origin)) {
    self->count_dropped_signal(origin, *why);
    return 0;
  }
  const char *name = nullptr, *old_owner = nullptr, *new_owner = nullptr;
  if (sd_bus_message_read(message, "sss", &name, &old_owner, &new_owner) < 0) return 0;
  if (std::string_view(name) != names::kBusName) return 0;
  self->set_xpud_owner(new_owner ? new_owner : "");
  return 0;
}

// Relays what xpud broadcast, and only its API's signals: a signal that another peer addressed to
// the proxy, or one the owner of xpud's name sent to the proxy alone, reaches no client.
int ProxyServer::on_xpud_signal(sd_bus_message* message, void* userdata, sd_bus_error*) {
  auto* self = static_cast<ProxyServer*>(userdata);
  const SignalOrigin origin = origin_of(message);
  if (auto why = why_not_xpud_signal(origin, self->xpud_owner_)) {
    self->count_dropped_signal(origin, *why);
    return 0;
  }
  self->relay_to_clients(message, self->xpud_owner_);
  return 0;
}

// Each logged at debug level (a peer can send many); their count is in the unit's status line.
void ProxyServer::count_dropped_signal(const SignalOrigin& origin, const std::string& why) {
  ++dropped_signals_;
  spdlog::debug("dropped the signal {}: {}", describe_signal(origin), why);
}

void ProxyServer::relay_to_clients(sd_bus_message* signal, const std::string& sender) {
  for (auto& [id, session] : sessions_) session->relay_signal(signal, sender);
}

void ProxyServer::session_closed() {
  sd_event_source_set_enabled(reap_source_.get(), SD_EVENT_ONESHOT);
}

int ProxyServer::on_reap(sd_event_source*, void* userdata) {
  static_cast<ProxyServer*>(userdata)->reap_closed_sessions();
  return 0;
}

void ProxyServer::reap_closed_sessions() {
  std::erase_if(sessions_, [this](const auto& entry) {
    if (!entry.second->closed()) return false;
    connections_.give_back(entry.second->uid());
    return true;
  });
}

// Before a client is refused for want of room: the clients that hung up since the loop last
// looked, and the sessions closed but not reaped yet, hold places they no longer use. A client
// that closes its connections and connects again at once (a busy proxy sees both together) would
// otherwise be refused for connections it no longer has. One poll for all the sessions, only when
// a refusal is due. Safe here: on_accept runs outside any session's sd-bus callback. True when
// a place was given back.
bool ProxyServer::close_hung_up_clients() {
  std::vector<pollfd> sockets;
  std::vector<ClientSession*> polled;
  bool any_closed = false;
  for (auto& [id, session] : sessions_) {
    any_closed = any_closed || session->closed();
    if (session->closed()) continue;
    sockets.push_back(pollfd{session->client_socket(), POLLRDHUP, 0});
    polled.push_back(session.get());
  }
  if (!sockets.empty() && ::poll(sockets.data(), sockets.size(), 0) > 0) {
    for (std::size_t i = 0; i < sockets.size(); ++i) {
      // Hung up as on_client sees it (ClientStream::on_client): the client cannot read an answer.
      if (sockets[i].revents & (POLLHUP | POLLERR)) {
        polled[i]->client_hung_up();
        any_closed = true;
      }
    }
  }
  if (any_closed) reap_closed_sessions();
  return any_closed;
}

int ProxyServer::on_status_timer(sd_event_source* source, std::uint64_t, void* userdata) {
  static_cast<ProxyServer*>(userdata)->update_status();
  sd_event_source_set_time_relative(source, 1000000);
  sd_event_source_set_enabled(source, SD_EVENT_ON);
  return 0;
}

// At most once a second, so a client storm does not turn into a storm of notify messages.
void ProxyServer::update_status() {
  std::string status = std::to_string(sessions_.size()) + " clients, xpud " +
                       (!upstream_            ? std::string("unreachable (system bus lost)")
                        : xpud_owner_.empty() ? std::string("not on the bus")
                                              : "at " + xpud_owner_);
  if (refused_clients_ > 0)
    status += ", " + std::to_string(refused_clients_) + " clients refused (limit " +
              std::to_string(limits_.max_clients) + ", " +
              std::to_string(limits_.max_clients_per_uid) + " per uid)";
  if (timed_out_clients_ > 0) status += ", " + std::to_string(timed_out_clients_) + " closed idle";
  if (dropped_signals_ > 0)
    status += ", " + std::to_string(dropped_signals_) + " signals dropped (not xpud's broadcasts)";
  if (upstream_losses_ > 0)
    status += ", system bus lost " + std::to_string(upstream_losses_) + " times";
  if (status == last_status_) return;
  last_status_ = status;
  sd_notify(0, ("STATUS=" + status).c_str());
}

}  // namespace xpu::api_proxy
