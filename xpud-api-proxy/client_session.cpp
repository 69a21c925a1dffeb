#include "xpud-api-proxy/client_session.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "common/names.h"
#include "xpud-api-proxy/api_filter.h"
#include "xpud-api-proxy/bus_errors.h"
#include "xpud-api-proxy/client_bus.h"
#include "xpud-api-proxy/proxy_server.h"

namespace xpu::api_proxy {
namespace {

using bus_errors::kAccessDenied;
using bus_errors::kFailed;
using bus_errors::kLimitsExceeded;
using bus_errors::kNameHasNoOwner;

std::string text_or(const char* text, const char* fallback) {
  return text ? text : fallback;
}

}  // namespace

ClientSession::ClientSession(ProxyServer& server, std::uint64_t id, UniqueFd socket,
                             std::optional<uid_t> uid, std::string peer, ApiSocket socket_kind,
                             sd_event* event)
    : server_(server), id_(id), peer_(std::move(peer)), peer_uid_(uid), socket_kind_(socket_kind) {
  const ProxyLimits& limits = server_.limits();
  StreamLimits stream_limits;
  stream_limits.max_message_bytes = limits.max_message_bytes;
  stream_limits.max_output_bytes = limits.max_output_bytes_per_client;
  // Root's clients (the cluster's pods, xpuctl) are not in the pool the other uids share.
  stream_limits.shared_output = uid == uid_t{0} ? nullptr : &server_.output_pool_of_others();
  stream_ = std::make_unique<ClientStream>(std::move(socket), event, stream_limits,
                                           [this](const std::string& why) { close(why); });
  UniqueFd bus_end = stream_->take_bus_end();

  sd_bus* raw = nullptr;
  int r = sd_bus_new(&raw);
  if (r < 0) throw std::runtime_error(std::string("sd_bus_new: ") + std::strerror(-r));
  bus_.reset(raw);
  sd_id128_t bus_id{};
  sd_id128_from_string(server_.bus_id().c_str(), &bus_id);
  // What the client may do is decided by the filter.
  if ((r = configure_client_bus(raw, std::move(bus_end), bus_id)) < 0)
    throw std::runtime_error(std::string("setting up the client connection: ") + std::strerror(-r));
  sd_bus_slot* slot = nullptr;
  if ((r = sd_bus_add_filter(raw, &slot, &ClientSession::on_message, this)) < 0)
    throw std::runtime_error(std::string("sd_bus_add_filter: ") + std::strerror(-r));
  filter_.reset(slot);
  if ((r = sd_bus_start(raw)) < 0 || (r = sd_bus_attach_event(raw, event, 0)) < 0)
    throw std::runtime_error(std::string("starting the client connection: ") + std::strerror(-r));
  sd_event_source* source = nullptr;
  if ((r = sd_event_add_post(event, &source, &ClientSession::on_post, this)) < 0)
    throw std::runtime_error(std::string("sd_event_add_post: ") + std::strerror(-r));
  connect_pump_.reset(source);
  if ((r = sd_event_add_time_relative(event, &source, CLOCK_MONOTONIC, 0, 0,
                                      &ClientSession::on_deadline, this)) < 0)
    throw std::runtime_error(std::string("sd_event_add_time_relative: ") + std::strerror(-r));
  deadline_.reset(source);
  arm_deadline(limits.hello_timeout, "Hello", "of connecting");
}

ClientSession::~ClientSession() {
  // The bus first: it must not write into a stream that is gone.
  deadline_.reset();
  connect_pump_.reset();
  filter_.reset();
  bus_.reset();
  stream_.reset();
}

void ClientSession::arm_deadline(std::chrono::microseconds after, const char* waiting_for,
                                 const char* since) {
  deadline_reason_ =
      std::string("no ") + waiting_for + " within " +
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(after).count()) +
      " ms " + since;
  sd_event_source_set_time_relative(deadline_.get(), static_cast<std::uint64_t>(after.count()));
  sd_event_source_set_enabled(deadline_.get(), SD_EVENT_ONESHOT);
}

// A connection that holds a place without using it: no Hello in time after connecting (which
// covers authentication too), or no call in time after Hello. After its first call a client may
// stay as long as it likes: the shim's watchers connect once and wait for signals.
int ClientSession::on_deadline(sd_event_source*, std::uint64_t, void* userdata) {
  auto* self = static_cast<ClientSession*>(userdata);
  self->server_.count_timed_out();
  self->close(self->deadline_reason_);
  return 0;
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
  // The stand-in the inbound filter put where a call too large to take was.
  if (interface == kRefusedInterface && member == kTooLargeMember) return answer_too_large(message);
  const CallRoute route =
      route_call(destination, interface, member, server_.xpud_owner(), socket_kind_);

  if (!said_hello() && !(route.route == Route::BusDriver && member == "Hello")) {
    reply_error(message, kAccessDenied, "the first call on a bus connection must be Hello");
    return 1;
  }
  if (said_hello() && !called_) {
    called_ = true;
    sd_event_source_set_enabled(deadline_.get(), SD_EVENT_OFF);
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
      return forward(message, route.route, interface + "." + member);
  }
  return 1;
}

int ClientSession::forward(sd_bus_message* message, Route route, const std::string& what) {
  if (pending_calls_ >= server_.limits().max_pending_calls_per_client) {
    reply_error(message, kLimitsExceeded,
                "more than " + std::to_string(server_.limits().max_pending_calls_per_client) +
                    " calls to xpud outstanding on this connection");
    return 1;
  }
  if (route == Route::ForwardIfHostAllows) {
    // The client's uid is known here; whether the host allows it only xpud can say, so that is
    // asked upstream before the call goes on (ProxyServer::forward_if_host_allows).
    if (auto refusal = cluster_write_refusal(true, peer_uid_)) {
      spdlog::warn("refused {} from {}: {}", what, peer_, *refusal);
      reply_error(message, kAccessDenied, *refusal);
      return 1;
    }
  }
  const auto refusal = route == Route::ForwardIfHostAllows
                           ? server_.forward_if_host_allows(*this, message)
                           : server_.forward(*this, message);
  if (refusal) {
    reply_error(message, refusal->error_name, refusal->text);
    return 1;
  }
  ++pending_calls_;
  return 1;
}

int ClientSession::answer_too_large(sd_bus_message* call) {
  std::uint64_t size = 0;
  (void)sd_bus_message_read(call, "t", &size);
  spdlog::log(refusals_++ == 0 ? spdlog::level::info : spdlog::level::debug,
              "refused a message of {} bytes from {} (limit {})", size, peer_,
              server_.limits().max_message_bytes);
  reply_error(call, kLimitsExceeded,
              "a message of " + std::to_string(size) + " bytes is larger than the " +
                  std::to_string(server_.limits().max_message_bytes) +
                  " bytes xpud's API socket takes; it was not forwarded");
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
    arm_deadline(server_.limits().first_call_timeout, "call", "of its Hello");
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

void ClientSession::refuse_forward(sd_bus_message* call, const std::string& reason,
                                   const char* error_name) {
  if (pending_calls_ > 0) --pending_calls_;
  if (closed_) return;
  reply_error(call, error_name ? error_name : kAccessDenied, reason);
}

void ClientSession::announce_owner_change(const std::string& old_owner,
                                          const std::string& new_owner) {
  if (closed_ || !said_hello()) return;
  sd_bus_message* raw = nullptr;
  const std::string driver(kDriverName);
  if (sd_bus_message_new_signal(bus_.get(), &raw, std::string(names::bus::kDriverPath).c_str(),
                                driver.c_str(), "NameOwnerChanged") < 0)
    return;
  MessagePtr signal(raw);
  if (sd_bus_message_append(signal.get(), "sss", std::string(names::kBusName).c_str(),
                            old_owner.c_str(), new_owner.c_str()) < 0 ||
      sd_bus_message_set_sender(signal.get(), driver.c_str()) < 0)
    return;
  send(signal.get());
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
  // Count what sd-bus wrote at once, so the next message meets a current byte count.
  stream_->pump_output();
  return !closed_;
}

void ClientSession::close(const std::string& why) {
  if (closed_) return;
  closed_ = true;
  spdlog::debug("client {} ({}) closed: {}", id_, peer_, why);
  // Detach from the loop now; the session object itself goes when the server reaps it.
  stream_->stop();
  sd_event_source_set_enabled(connect_pump_.get(), SD_EVENT_OFF);
  sd_event_source_set_enabled(deadline_.get(), SD_EVENT_OFF);
  sd_bus_detach_event(bus_.get());
  sd_bus_close(bus_.get());
  server_.session_closed();
}

}  // namespace xpu::api_proxy
