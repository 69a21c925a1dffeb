// One client of the read-only API socket: a D-Bus server-side connection on the accepted socket.
// The session answers the bus-driver calls a client needs to connect (Hello, AddMatch, ...),
// hands xpud reads to the ProxyServer for forwarding, refuses everything else, and sends the
// client xpud's signals. Runs on the proxy's one event loop thread, like everything else here.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "common/unique_fd.h"
#include "xpud-api-proxy/sd_handles.h"

namespace xpu::api_proxy {

class ProxyServer;

class ClientSession {
 public:
  // Takes the accepted socket; throws std::runtime_error when sd-bus cannot set it up.
  ClientSession(ProxyServer& server, std::uint64_t id, UniqueFd socket, sd_event* event);
  ClientSession(const ClientSession&) = delete;
  ClientSession& operator=(const ClientSession&) = delete;

  std::uint64_t id() const { return id_; }
  // Set once the connection is gone; the server reaps the session outside sd-bus callbacks.
  bool closed() const { return closed_; }
  bool said_hello() const { return !unique_name_.empty(); }
  const std::string& peer() const { return peer_; }

  // Sends the client a copy of `signal` (from xpud or the bus) with `sender` as its sender.
  void relay_signal(sd_bus_message* signal, const std::string& sender);
  // Delivers xpud's reply (or error) to `call`, a method call this client made.
  void deliver_reply(sd_bus_message* call, sd_bus_message* reply, const std::string& sender);
  // The upstream call for `call` failed before any reply (xpud gone, timeout, ...).
  void deliver_error(sd_bus_message* call, const sd_bus_error* error);
  // A ForwardIfHostAllows call that will not go to xpud after all: AccessDenied with `reason`
  // (or Failed when `failed`), counted off the outstanding calls.
  void refuse_forward(sd_bus_message* call, const std::string& reason, bool failed = false);

 private:
  static int on_message(sd_bus_message* message, void* userdata, sd_bus_error* error);
  static int on_post(sd_event_source* source, void* userdata);
  int handle(sd_bus_message* message);
  int answer_driver_call(sd_bus_message* call, const std::string& member);
  void reply_error(sd_bus_message* call, const char* name, const std::string& text);
  void close(const char* why);
  bool send(sd_bus_message* message);

  ProxyServer& server_;
  std::uint64_t id_;
  std::string peer_;               // "pid 12 uid 0", for logs
  std::optional<uid_t> peer_uid_;  // from SO_PEERCRED when the socket told
  std::string unique_name_;
  unsigned pending_calls_ = 0;
  unsigned refusals_ = 0;
  bool closed_ = false;
  BusPtr bus_;
  SlotPtr filter_;
  EventSourcePtr connect_pump_;  // see on_post
};

}  // namespace xpu::api_proxy
