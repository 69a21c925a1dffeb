// One client of an API socket: a D-Bus server-side connection behind a ClientStream. The session
// answers the bus-driver calls a client needs to connect (Hello, AddMatch, ...), hands xpud reads
// to the ProxyServer for forwarding, refuses everything else, and sends the client xpud's signals.
// A client must say Hello within a deadline after connecting and make a call within a deadline
// after that, so a connection that only holds a place is closed. Runs on the proxy's one event
// loop thread, like everything else here.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/unique_fd.h"
#include "xpud-api-proxy/api_filter.h"
#include "xpud-api-proxy/client_stream.h"
#include "xpud-api-proxy/sd_handles.h"

namespace xpu::api_proxy {

class ProxyServer;

class ClientSession {
 public:
  // Takes the accepted socket; `uid` is its peer's (SO_PEERCRED), nullopt when the socket did
  // not say. Throws std::runtime_error when sd-bus cannot set it up.
  ClientSession(ProxyServer& server, std::uint64_t id, UniqueFd socket, std::optional<uid_t> uid,
                std::string peer, ApiSocket socket_kind, sd_event* event);
  ~ClientSession();
  ClientSession(const ClientSession&) = delete;
  ClientSession& operator=(const ClientSession&) = delete;

  std::uint64_t id() const { return id_; }
  // Set once the connection is gone; the server reaps the session outside sd-bus callbacks.
  bool closed() const { return closed_; }
  bool said_hello() const { return !unique_name_.empty(); }
  const std::string& peer() const { return peer_; }
  std::optional<uid_t> uid() const { return peer_uid_; }
  // The client's socket (-1 once closed), and closing the session when it has hung up: the
  // server looks before it refuses a new client for want of room (close_hung_up_clients).
  int client_socket() const { return closed_ ? -1 : stream_->client_socket(); }
  void client_hung_up() { close("it hung up"); }

  // Sends the client a copy of `signal` (from xpud or the bus) with `sender` as its sender.
  void relay_signal(sd_bus_message* signal, const std::string& sender);
  // Tells the client that xpud's name changed owner (the proxy lost or regained the system bus,
  // where no NameOwnerChanged of the bus's own reaches it).
  void announce_owner_change(const std::string& old_owner, const std::string& new_owner);
  // Delivers xpud's reply (or error) to `call`, a method call this client made.
  void deliver_reply(sd_bus_message* call, sd_bus_message* reply, const std::string& sender);
  // The upstream call for `call` failed before any reply (xpud gone, timeout, ...).
  void deliver_error(sd_bus_message* call, const sd_bus_error* error);
  // A forwarded call that will not go to xpud after all: AccessDenied with `reason` (or
  // `error_name`), counted off the outstanding calls.
  void refuse_forward(sd_bus_message* call, const std::string& reason,
                      const char* error_name = nullptr);

 private:
  static int on_message(sd_bus_message* message, void* userdata, sd_bus_error* error);
  static int on_post(sd_event_source* source, void* userdata);
  static int on_deadline(sd_event_source* source, std::uint64_t usec, void* userdata);
  int handle(sd_bus_message* message);
  int forward(sd_bus_message* message, Route route, const std::string& what);
  int answer_driver_call(sd_bus_message* call, const std::string& member);
  int answer_too_large(sd_bus_message* call);
  void reply_error(sd_bus_message* call, const char* name, const std::string& text);
  void arm_deadline(std::chrono::microseconds after, const char* waiting_for, const char* since);
  void close(const std::string& why);
  bool send(sd_bus_message* message);

  ProxyServer& server_;
  std::uint64_t id_;
  std::string peer_;               // "pid 12 uid 0", for logs
  std::optional<uid_t> peer_uid_;  // from SO_PEERCRED when the socket told
  ApiSocket socket_kind_;
  std::string unique_name_;
  unsigned pending_calls_ = 0;
  unsigned refusals_ = 0;
  bool closed_ = false;
  bool called_ = false;          // made a call after Hello
  std::string deadline_reason_;  // why the client is closed when the armed deadline passes
  std::unique_ptr<ClientStream> stream_;
  BusPtr bus_;
  SlotPtr filter_;
  EventSourcePtr connect_pump_;  // see on_post
  EventSourcePtr deadline_;
};

}  // namespace xpu::api_proxy
