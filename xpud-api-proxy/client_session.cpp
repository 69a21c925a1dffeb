#include "xpud-api-proxy/client_session.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "common/names.h"
#include "xpud-api-proxy/api_filter.h"
#include "xpud-api-proxy/proxy_server.h"

namespace xpu::api_proxy {
namespace {

// sd-bus takes C strings: names.h's views are of string literals, so the literal's NUL follows.
constexpr const char* c_string(std::string_view literal) {
  return literal.data();
}
constexpr bool nul_terminated(std::string_view literal) {
  return literal.data()[literal.size()] == '\0';
}
static_assert(nul_terminated(names::bus::kErrorAccessDenied) &&
              nul_terminated(names::bus::kErrorLimitsExceeded) &&
              nul_terminated(names::bus::kErrorNameHasNoOwner) &&
              nul_terminated(names::bus::kErrorFailed));
constexpr const char* kAccessDenied = c_string(names::bus::kErrorAccessDenied);
constexpr const char* kLimitsExceeded = c_string(names::bus::kErrorLimitsExceeded);
constexpr const char* kNameHasNoOwner = c_string(names::bus::kErrorNameHasNoOwner);
constexpr const char* kFailed = c_string(names::bus::kErrorFailed);

std::optional<ucred> credentials_of(int fd) {
  ucred cred{};
  socklen_t length = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) < 0) return std::nullopt;
  return cred;
}

std::string describe_peer(const std::optional<ucred>& cred) {
  if (!cred) return "unknown peer";
  return "pid " + std::to_string(cred->pid) + " uid " + std::to_string(cred->uid);
}

std::string text_or(const char* text, const char* fallback) {
  return text ? text : fallback;
}

}  // namespace

ClientSession::ClientSession(ProxyServer& server, std::uint64_t id, UniqueFd socket,
                             sd_event* event)
    : server_(server), id_(id) {
  const auto credentials = credentials_of(socket.get());
  peer_ = describe_peer(credentials);
  if (credentials) peer_uid_ = credentials->uid;
  sd_bus* raw = nullptr;
  int r = sd_bus_new(&raw);
  if (r < 0) throw std::runtime_error(std::string("sd_bus_new: ") + std::strerror(-r));
  bus_.reset(raw);
  sd_id128_t bus_id{};
  sd_id128_from_string(server_.bus_id().c_str(), &bus_id);
  // The client authenticates with its own uid (EXTERNAL) or anonymously; who may connect at all
  // is decided by the socket's place in the file system, what a client may do by the filter.
  if ((r = sd_bus_set_fd(raw, socket.get(), socket.get())) < 0)
    throw std::runtime_error(std::string("sd_bus_set_fd: ") + std::strerror(-r));
  socket.release();  // the bus owns it now
  if ((r = sd_bus_set_server(raw, 1, bus_id)) < 0 || (r = sd_bus_set_anonymous(raw, 1)) < 0 ||
      (r = sd_bus_negotiate_fds(raw, 0)) < 0)
    throw std::runtime_error(std::string("setting up the client connection: ") + std::strerror(-r));
  sd_bus_slot* slot = nullptr;
  if ((r = sd_bus_add_filter(raw, &slot, &ClientSession::on_message, this)) < 0)
    throw std::runtime_error(std::string("sd_bus_add_filter: ") + std::strerror(-r));
  filter_.reset(slot);
  if ((r = sd_bus_start(raw)) < 0 || (r = sd_bus_attach_event(raw, event, 0)) < 0)
    throw std::runtime_error(std::string("starting the client connection: ") + std::strerror(-r));
  sd_event_source* pump = nullptr;
  if ((r = sd_event_add_post(event, &pump, &ClientSession::on_post, this)) < 0)
    throw std::runtime_error(std::string("sd_event_add_post: ") + std::strerror(-r));
  connect_pump_.reset(pump);
}

// libdbus clients send BEGIN and their Hello in one write. sd-bus leaves the bytes after BEGIN
// in its read buffer when authentication ends, and no new data arrives to wake the loop: the
// client would wait for its Hello reply forever. Until Hello is answered, process the
// connection after every loop iteration so buffered bytes are parsed.
int ClientSession::on_post(sd_event_source*, void* userdata) {
  auto* self = static_cast<ClientSession*>(userdata);
  if (self->closed_ || self->said_hello()) {
    self->connect_pump_.reset();
    return 0;
  }
  while (!self->closed_ && sd_bus_process(self->bus_.get(), nullptr) > 0) {
  }
  return 0;
}

int ClientSession::on_message(sd_bus_message* message, void* userdata, sd_bus_error*) {
  return static_cast<ClientSession*>(userdata)->handle(message);
}

int ClientSession::handle(sd_bus_message* message) {
  if (sd_bus_message_is_signal(message, std::string(names::bus::kLocalInterface).c_str(),
                               "Disconnected")) {
    close("disconnected");
    return 1;
  }
  std::uint8_t type = 0;
  sd_bus_message_get_type(message, &type);
  // A client has no business sending signals or replies here: xpud never calls clients.
  if (type != SD_BUS_MESSAGE_METHOD_CALL) return 1;

  const std::string destination = text_or(sd_bus_message_get_destination(message), "");
  const std::string interface = text_or(sd_bus_message_get_interface(message), "");
  const std::string member = text_or(sd_bus_message_get_member(message), "");
  const CallRoute route = route_call(destination, interface, member, server_.xpud_owner());

  if (!said_hello() && !(route.route == Route::BusDriver && member == "Hello")) {
    reply_error(message, kAccessDenied, "the first call on a bus connection must be Hello");
    return 1;
  }
  switch (route.route) {
    case Route::BusDriver:
      return answer_driver_call(message, member);
    case Route::Deny:
      // The first refusal per connection is worth an operator's attention; a client that keeps
      // trying must not flood the journal.
      spdlog::log(refusals_++ == 0 ? spdlog::level::info : spdlog::level::debug,
                  "refused {} from {} ({})", interface + "." + member, peer_, route.reason);
      reply_error(message, kAccessDenied, route.reason);
      return 1;
    case Route::Forward:
    case Route::ForwardIfHostAllows:
      break;
  }
  if (pending_calls_ >= server_.limits().max_pending_calls_per_client) {
    reply_error(message, kLimitsExceeded,
                "more than " + std::to_string(server_.limits().max_pending_calls_per_client) +
                    " calls to xpud outstanding on this connection");
    return 1;
  }
  if (route.route == Route::ForwardIfHostAllows) {
    // The client's uid is known here; whether the host allows it only xpud can say, so that is
    // asked upstream before the call goes on (ProxyServer::forward_if_host_allows).
    if (auto refusal = cluster_write_refusal(true, peer_uid_)) {
      spdlog::warn("refused {} from {}: {}", interface + "." + member, peer_, *refusal);
      reply_error(message, kAccessDenied, *refusal);
      return 1;
    }
    const int r = server_.forward_if_host_allows(id_, message, peer_);
    if (r < 0) {
      reply_error(message, kFailed, std::string("cannot ask xpud: ") + std::strerror(-r));
      return 1;
    }
    ++pending_calls_;
    return 1;
  }
  const int r = server_.forward(id_, message);
  if (r < 0) {
    reply_error(message, kFailed, std::string("cannot forward to xpud: ") + std::strerror(-r));
    return 1;
  }
  ++pending_calls_;
  return 1;
}

int ClientSession::answer_driver_call(sd_bus_message* call, const std::string& member) {
  const std::string& owner = server_.xpud_owner();
  const std::string xpud_name(names::kBusName);
  sd_bus_message* raw = nullptr;
  int r = 0;
  if (member == "Hello") {
    if (said_hello()) {
      reply_error(call, kFailed, "Hello was already called on this connection");
      return 1;
    }
    unique_name_ = ":api." + std::to_string(id_);
    r = sd_bus_message_new_method_return(call, &raw);
    if (r >= 0) r = sd_bus_message_append(raw, "s", unique_name_.c_str());
  } else if (member == "AddMatch" || member == "RemoveMatch" || member == "Ping") {
    // Every client gets xpud's signals and its NameOwnerChanged; the client library dispatches
    // them by its own match rules, as it does on a real bus.
    r = sd_bus_message_new_method_return(call, &raw);
  } else if (member == "GetNameOwner" || member == "NameHasOwner") {
    const char* name = nullptr;
    if (sd_bus_message_read(call, "s", &name) < 0) {
      reply_error(call, std::string(names::bus::kErrorInvalidArgs).c_str(),
                  "expected one string argument");
      return 1;
    }
    std::string found;
    if (name == xpud_name || (!owner.empty() && name == owner))
      found = owner;
    else if (std::string_view(name) == kDriverName)
      found = std::string(kDriverName);
    else if (name == unique_name_)
      found = unique_name_;
    if (member == "NameHasOwner") {
      r = sd_bus_message_new_method_return(call, &raw);
      if (r >= 0) r = sd_bus_message_append(raw, "b", !found.empty());
    } else if (found.empty()) {
      reply_error(call, kNameHasNoOwner,
                  "could not get owner of name '" + std::string(name) +
                      "': no such name on xpud's read-only API socket");
      return 1;
    } else {
      r = sd_bus_message_new_method_return(call, &raw);
      if (r >= 0) r = sd_bus_message_append(raw, "s", found.c_str());
    }
  } else if (member == "ListNames" || member == "ListActivatableNames") {
    r = sd_bus_message_new_method_return(call, &raw);
    if (r >= 0 && member == "ListNames") {
      if (owner.empty())
        r = sd_bus_message_append(raw, "as", 2, std::string(kDriverName).c_str(),
                                  unique_name_.c_str());
      else
        r = sd_bus_message_append(raw, "as", 4, std::string(kDriverName).c_str(),
                                  unique_name_.c_str(), xpud_name.c_str(), owner.c_str());
    } else if (r >= 0) {
      r = sd_bus_message_append(raw, "as", 0);
    }
  } else if (member == "GetId") {
    r = sd_bus_message_new_method_return(call, &raw);
    if (r >= 0) r = sd_bus_message_append(raw, "s", server_.bus_id().c_str());
  } else {
    reply_error(call, kAccessDenied, member + " is not answered here");
    return 1;
  }
  MessagePtr reply(raw);
  if (r < 0) {
    reply_error(call, kFailed, std::string("building the reply: ") + std::strerror(-r));
    return 1;
  }
  sd_bus_message_set_sender(reply.get(), std::string(kDriverName).c_str());
  if (sd_bus_message_get_expect_reply(call)) send(reply.get());
  return 1;
}

void ClientSession::reply_error(sd_bus_message* call, const char* name, const std::string& text) {
  if (!sd_bus_message_get_expect_reply(call)) return;
  sd_bus_message* raw = nullptr;
  if (sd_bus_message_new_method_errorf(call, &raw, name, "%s", text.c_str()) < 0) return;
  MessagePtr error(raw);
  sd_bus_message_set_sender(error.get(), std::string(kDriverName).c_str());
  send(error.get());
}

void ClientSession::relay_signal(sd_bus_message* signal, const std::string& sender) {
  if (closed_ || !said_hello()) return;
  sd_bus_message* raw = nullptr;
  int r = sd_bus_message_new_signal(bus_.get(), &raw, sd_bus_message_get_path(signal),
                                    sd_bus_message_get_interface(signal),
                                    sd_bus_message_get_member(signal));
  if (r < 0) return;
  MessagePtr copy(raw);
  if ((r = sd_bus_message_rewind(signal, 1)) < 0 ||
      (r = sd_bus_message_copy(copy.get(), signal, 1)) < 0 ||
      (r = sd_bus_message_set_sender(copy.get(), sender.c_str())) < 0) {
    spdlog::warn("cannot relay {} to {}: {}", text_or(sd_bus_message_get_member(signal), "?"),
                 peer_, std::strerror(-r));
    return;
  }
  send(copy.get());
}

void ClientSession::deliver_reply(sd_bus_message* call, sd_bus_message* reply,
                                  const std::string& sender) {
  if (pending_calls_ > 0) --pending_calls_;
  if (closed_ || !sd_bus_message_get_expect_reply(call)) return;
  if (sd_bus_message_is_method_error(reply, nullptr)) {
    deliver_error(call, sd_bus_message_get_error(reply));
    return;
  }
  sd_bus_message* raw = nullptr;
  int r = sd_bus_message_new_method_return(call, &raw);
  if (r < 0) return;
  MessagePtr copy(raw);
  if ((r = sd_bus_message_rewind(reply, 1)) < 0 ||
      (r = sd_bus_message_copy(copy.get(), reply, 1)) < 0) {
    reply_error(call, kFailed, std::string("copying xpud's reply: ") + std::strerror(-r));
    return;
  }
  if (!sender.empty()) sd_bus_message_set_sender(copy.get(), sender.c_str());
  send(copy.get());
}

void ClientSession::refuse_forward(sd_bus_message* call, const std::string& reason, bool failed) {
  if (pending_calls_ > 0) --pending_calls_;
  if (closed_) return;
  reply_error(call, failed ? kFailed : kAccessDenied, reason);
}

void ClientSession::deliver_error(sd_bus_message* call, const sd_bus_error* error) {
  if (closed_ || !sd_bus_message_get_expect_reply(call)) return;
  reply_error(call, error && error->name ? error->name : kFailed,
              error && error->message ? error->message : "xpud did not answer");
}

bool ClientSession::send(sd_bus_message* message) {
  if (closed_) return false;
  std::uint64_t queued = 0;
  if (sd_bus_get_n_queued_write(bus_.get(), &queued) >= 0 &&
      queued >= server_.limits().max_queued_messages) {
    close("it stopped reading (write queue full)");
    return false;
  }
  const int r = sd_bus_send(bus_.get(), message, nullptr);
  if (r < 0) {
    close(std::strerror(-r));
    return false;
  }
  return true;
}

void ClientSession::close(const char* why) {
  if (closed_) return;
  closed_ = true;
  spdlog::debug("client {} ({}) closed: {}", id_, peer_, why);
  // Detach from the loop now; the session object itself goes when the server reaps it.
  sd_event_source_set_enabled(connect_pump_.get(), SD_EVENT_OFF);
  sd_bus_detach_event(bus_.get());
  sd_bus_close(bus_.get());
  server_.session_closed();
}

}  // namespace xpu::api_proxy
