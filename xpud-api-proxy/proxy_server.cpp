#include "xpud-api-proxy/proxy_server.h"

#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX sigset_t, not in <csignal>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "common/names.h"
#include "xpud-api-proxy/api_filter.h"

namespace xpu::api_proxy {
namespace {

std::runtime_error failure(const std::string& what, int negative_errno) {
  return std::runtime_error(what + ": " + std::strerror(-negative_errno));
}

// Keeps the original call alive until xpud answers; freed with the upstream call's slot.
struct PendingForward {
  ProxyServer* server;
  std::uint64_t session_id;
  MessagePtr call;
};

// A ConfigureVirtualFunctions waiting for xpud's ClusterReconfigureAllowed.
struct PendingPermission {
  ProxyServer* server;
  std::uint64_t session_id;
  MessagePtr call;
  std::string peer;
};

}  // namespace

ProxyServer::ProxyServer(UniqueFd listen_socket, const std::optional<std::string>& upstream_address,
                         ProxyLimits limits)
    : limits_(limits), listen_socket_(std::move(listen_socket)) {
  sd_event* event = nullptr;
  int r = sd_event_new(&event);
  if (r < 0) throw failure("sd_event_new", r);
  event_.reset(event);

  sd_bus* bus = nullptr;
  if (upstream_address) {
    if ((r = sd_bus_new(&bus)) < 0) throw failure("sd_bus_new", r);
    upstream_.reset(bus);
    if ((r = sd_bus_set_address(bus, upstream_address->c_str())) < 0)
      throw failure("bus address " + *upstream_address, r);
    sd_bus_set_bus_client(bus, 1);
    if ((r = sd_bus_start(bus)) < 0) throw failure("connecting to " + *upstream_address, r);
  } else {
    if ((r = sd_bus_open_system(&bus)) < 0) throw failure("connecting to the system bus", r);
    upstream_.reset(bus);
  }
  // Without the bus there is nothing to serve: leave the loop with 1, systemd restarts us and
  // the clients reconnect, as they do when xpud restarts.
  sd_bus_set_exit_on_disconnect(bus, 1);
  if ((r = sd_bus_attach_event(bus, event, 0)) < 0) throw failure("sd_bus_attach_event", r);

  sd_id128_t id{};
  if (sd_bus_get_bus_id(bus, &id) >= 0) {
    char text[SD_ID128_STRING_MAX];
    bus_id_ = sd_id128_to_string(id, text);
  } else {
    bus_id_ = "00000000000000000000000000000000";
  }

  // Follow the owner of xpud's name before asking for it, so no change falls in between.
  const std::string xpud_name(names::kBusName);
  sd_bus_slot* slot = nullptr;
  const std::string driver(names::bus::kDriverName);
  const std::string driver_path(names::bus::kDriverPath);
  const std::string owner_rule = "type='signal',sender='" + driver + "',path='" + driver_path +
                                 "',interface='" + driver + "',member='NameOwnerChanged',arg0='" +
                                 xpud_name + "'";
  if ((r = sd_bus_add_match(bus, &slot, owner_rule.c_str(), &ProxyServer::on_owner_changed, this)) <
      0)
    throw failure("subscribing to NameOwnerChanged", r);
  owner_match_.reset(slot);
  // The bus delivers only signals whose sender owns xpud's name; on_xpud_signal checks again
  // against the owner it tracked, so a signal racing an owner change is dropped, not relayed.
  const std::string signal_rule = "type='signal',sender='" + xpud_name + "'";
  if ((r = sd_bus_add_match(bus, &slot, signal_rule.c_str(), &ProxyServer::on_xpud_signal, this)) <
      0)
    throw failure("subscribing to xpud's signals", r);
  signal_match_.reset(slot);

  BusError error;
  sd_bus_message* reply = nullptr;
  r = sd_bus_call_method(bus, driver.c_str(), driver_path.c_str(), driver.c_str(), "GetNameOwner",
                         error.get(), &reply, "s", xpud_name.c_str());
  MessagePtr owned_reply(reply);
  const char* owner = nullptr;
  if (r >= 0 && sd_bus_message_read(reply, "s", &owner) >= 0 && owner) xpud_owner_ = owner;
  spdlog::info("xpud is {}", xpud_owner_.empty() ? "not on the bus yet" : "at " + xpud_owner_);

  sd_event_source* source = nullptr;
  if ((r = sd_event_add_io(event, &source, listen_socket_.get(), EPOLLIN, &ProxyServer::on_accept,
                           this)) < 0)
    throw failure("watching the listening socket", r);
  accept_source_.reset(source);
  if ((r = sd_event_add_defer(event, &source, &ProxyServer::on_reap, this)) < 0)
    throw failure("sd_event_add_defer", r);
  reap_source_.reset(source);
  sd_event_source_set_enabled(source, SD_EVENT_OFF);
  if ((r = sd_event_add_time_relative(event, &source, CLOCK_MONOTONIC, 1000000, 0,
                                      &ProxyServer::on_status_timer, this)) < 0)
    throw failure("sd_event_add_time_relative", r);
  status_timer_.reset(source);
  sd_event_source_set_enabled(source, SD_EVENT_ON);

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
  signal_match_.reset();
  owner_match_.reset();
  upstream_.reset();
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
  if (r != 0) spdlog::error("lost the connection to the system bus");
  return r == 0 ? 0 : 1;
}

int ProxyServer::on_accept(sd_event_source*, int, std::uint32_t, void* userdata) {
  static_cast<ProxyServer*>(userdata)->accept_clients();
  return 0;
}

void ProxyServer::accept_clients() {
  for (;;) {
    UniqueFd client(
        ::accept4(listen_socket_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!client.valid()) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
        spdlog::warn("accept on the API socket failed: {}", std::strerror(errno));
      return;
    }
    if (sessions_.size() >= limits_.max_clients) {
      // Dropping the newest keeps the clients already connected (the node's shim) working.
      ++refused_clients_;
      spdlog::debug("refused a client: {} connected already", sessions_.size());
      continue;
    }
    const std::uint64_t id = next_session_id_++;
    try {
      auto session = std::make_unique<ClientSession>(*this, id, std::move(client), event_.get());
      spdlog::debug("client {} connected ({})", id, session->peer());
      sessions_.emplace(id, std::move(session));
    } catch (const std::exception& e) {
      spdlog::warn("cannot set up a client connection: {}", e.what());
    }
  }
}

int ProxyServer::forward(std::uint64_t session_id, sd_bus_message* call) {
  sd_bus_message* raw = nullptr;
  int r = sd_bus_message_new_method_call(
      upstream_.get(), &raw, std::string(names::kBusName).c_str(), sd_bus_message_get_path(call),
      sd_bus_message_get_interface(call), sd_bus_message_get_member(call));
  if (r < 0) return r;
  MessagePtr upstream_call(raw);
  if ((r = sd_bus_message_rewind(call, 1)) < 0 ||
      (r = sd_bus_message_copy(upstream_call.get(), call, 1)) < 0)
    return r;
  auto pending = std::make_unique<PendingForward>(
      PendingForward{this, session_id, MessagePtr(sd_bus_message_ref(call))});
  auto on_reply = [](sd_bus_message* reply, void* userdata, sd_bus_error*) -> int {
    auto* p = static_cast<PendingForward*>(userdata);
    auto& sessions = p->server->sessions_;
    auto it = sessions.find(p->session_id);
    if (it != sessions.end()) {
      const char* sender = sd_bus_message_get_sender(reply);
      it->second->deliver_reply(p->call.get(), reply, sender ? sender : "");
    }
    return 1;
  };
  sd_bus_slot* slot = nullptr;
  r = sd_bus_call_async(upstream_.get(), &slot, upstream_call.get(), on_reply, pending.get(),
                        static_cast<std::uint64_t>(limits_.upstream_call_timeout.count()));
  if (r < 0) return r;
  // The slot owns the pending state from here: floating, freed when the reply (or the timeout,
  // or the upstream bus's end) fires it.
  sd_bus_slot_set_destroy_callback(
      slot, [](void* userdata) { delete static_cast<PendingForward*>(userdata); });
  (void)pending.release();  // the slot's now
  sd_bus_slot_set_floating(slot, 1);
  sd_bus_slot_unref(slot);
  return 0;
}

int ProxyServer::forward_if_host_allows(std::uint64_t session_id, sd_bus_message* call,
                                        const std::string& peer) {
  auto pending = std::make_unique<PendingPermission>(
      PendingPermission{this, session_id, MessagePtr(sd_bus_message_ref(call)), peer});
  // Asked at every call rather than cached: the answer follows a reload of xpud's
  // configuration at once, and a write this rare can afford the extra round trip.
  auto on_answer = [](sd_bus_message* reply, void* userdata, sd_bus_error*) -> int {
    auto* p = static_cast<PendingPermission*>(userdata);
    auto& sessions = p->server->sessions_;
    auto it = sessions.find(p->session_id);
    if (it == sessions.end()) return 1;
    ClientSession& session = *it->second;
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
      refusal = cluster_write_refusal(allowed != 0, 0);
    }
    const std::string what = std::string(names::kManagerInterface) + "." +
                             std::string(names::member::kConfigureVirtualFunctions);
    if (refusal) {
      spdlog::warn("refused {} from {}: {}", what, p->peer, *refusal);
      session.refuse_forward(p->call.get(), *refusal);
      return 1;
    }
    spdlog::info("forwarding {} from {}: the host allows the cluster to change SR-IOV counts", what,
                 p->peer);
    if (const int r = p->server->forward(p->session_id, p->call.get()); r < 0)
      session.refuse_forward(p->call.get(),
                             std::string("cannot forward to xpud: ") + std::strerror(-r), true);
    return 1;
  };
  sd_bus_slot* slot = nullptr;
  const std::string manager(names::kManagerInterface);
  const std::string property(names::property::kClusterReconfigureAllowed);
  int r =
      sd_bus_call_method_async(upstream_.get(), &slot, std::string(names::kBusName).c_str(),
                               std::string(names::kManagerPath).c_str(),
                               std::string(names::bus::kPropertiesInterface).c_str(), "Get",
                               on_answer, pending.get(), "ss", manager.c_str(), property.c_str());
  if (r < 0) return r;
  sd_bus_slot_set_destroy_callback(
      slot, [](void* userdata) { delete static_cast<PendingPermission*>(userdata); });
  (void)pending.release();  // the slot's now
  sd_bus_slot_set_floating(slot, 1);
  sd_bus_slot_unref(slot);
  return 0;
}

int ProxyServer::on_owner_changed(sd_bus_message* message, void* userdata, sd_bus_error*) {
  auto* self = static_cast<ProxyServer*>(userdata);
  const char *name = nullptr, *old_owner = nullptr, *new_owner = nullptr;
  if (sd_bus_message_read(message, "sss", &name, &old_owner, &new_owner) < 0) return 0;
  if (std::string_view(name) != names::kBusName) return 0;
  self->xpud_owner_ = new_owner ? new_owner : "";
  spdlog::info("xpud is {}",
               self->xpud_owner_.empty() ? "gone from the bus" : "at " + self->xpud_owner_);
  self->relay_to_clients(message, std::string(kDriverName));
  return 0;
}

int ProxyServer::on_xpud_signal(sd_bus_message* message, void* userdata, sd_bus_error*) {
  auto* self = static_cast<ProxyServer*>(userdata);
  const char* sender = sd_bus_message_get_sender(message);
  if (!sender || self->xpud_owner_.empty() || self->xpud_owner_ != sender) {
    spdlog::debug("dropped a signal from {}, which does not own {}", sender ? sender : "(none)",
                  names::kBusName);
    return 0;
  }
  self->relay_to_clients(message, self->xpud_owner_);
  return 0;
}

void ProxyServer::relay_to_clients(sd_bus_message* signal, const std::string& sender) {
  for (auto& [id, session] : sessions_) session->relay_signal(signal, sender);
}

void ProxyServer::session_closed() {
  sd_event_source_set_enabled(reap_source_.get(), SD_EVENT_ONESHOT);
}

int ProxyServer::on_reap(sd_event_source*, void* userdata) {
  auto& sessions = static_cast<ProxyServer*>(userdata)->sessions_;
  std::erase_if(sessions, [](const auto& entry) { return entry.second->closed(); });
  return 0;
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
                       (xpud_owner_.empty() ? "not on the bus" : "at " + xpud_owner_);
  if (refused_clients_ > 0)
    status += ", " + std::to_string(refused_clients_) + " clients refused (limit " +
              std::to_string(limits_.max_clients) + ")";
  if (status == last_status_) return;
  last_status_ = status;
  sd_notify(0, ("STATUS=" + status).c_str());
}

}  // namespace xpu::api_proxy
