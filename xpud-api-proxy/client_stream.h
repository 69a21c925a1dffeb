// The bytes between one client's socket and the sd-bus connection that serves it.
//
// sd-bus reads and writes its end of a socketpair; this class moves bytes between the other end
// and the client's socket, so that the proxy, not sd-bus, decides what a client's bytes may cost:
//
//   - in: every byte passes the InboundFilter, so a message over the size limit is dropped as it
//     arrives instead of being read whole into memory; a client whose bytes sd-bus has not taken
//     yet is not read from (64 KiB at most wait here);
//   - out: whatever sd-bus writes is taken at once and kept here until the client reads it, so
//     what waits for a client is counted in bytes (sd-bus counts messages): past the client's own
//     limit, or past the share of the clients other than root together, the client is dropped;
//   - descriptors: none pass. The proxy offers no fd passing, and any SCM_RIGHTS a client sends
//     anyway are closed on arrival.
//
// Runs on the proxy's event loop, like everything else here.
#pragma once

#include <systemd/sd-event.h>

#include <cstdint>
#include <functional>
#include <string>

#include "common/unique_fd.h"
#include "xpud-api-proxy/inbound_filter.h"
#include "xpud-api-proxy/sd_handles.h"

namespace xpu::api_proxy {

// Bytes waiting for clients, counted across the clients that share a limit (the uids other than
// root): owned by the server, shared by reference.
struct OutputPool {
  std::size_t limit = 0;
  std::size_t used = 0;
};

struct StreamLimits {
  std::uint64_t max_message_bytes = 0;
  std::size_t max_output_bytes = 0;     // for this client
  OutputPool* shared_output = nullptr;  // nullptr: this client is not in a shared pool (root)
};

class ClientStream {
 public:
  // `on_close` is called once, with the reason, when the stream ends: the client hung up, broke
  // the protocol or its limits, or sd-bus closed its end. Throws std::runtime_error when the
  // socketpair or the event sources cannot be made.
  ClientStream(UniqueFd client, sd_event* event, StreamLimits limits,
               std::function<void(const std::string&)> on_close);
  ~ClientStream();
  ClientStream(const ClientStream&) = delete;
  ClientStream& operator=(const ClientStream&) = delete;

  // sd-bus's end of the socketpair (once; the caller hands it to sd_bus_set_fd).
  UniqueFd take_bus_end();
  // Takes what sd-bus wrote and writes what the client will take; call after sd_bus_send so the
  // byte count is current before the next message is queued.
  void pump_output();
  // Stops moving bytes (the session is closing).
  void stop();

  // The client's socket, for a poll outside the loop (ProxyServer::close_hung_up_clients).
  int client_socket() const { return client_.get(); }
  std::size_t queued_output() const { return to_client_.size(); }
  std::uint64_t refused_messages() const { return filter_.refused(); }
  bool authenticated() const { return filter_.authenticated(); }

 private:
  static int on_client(sd_event_source*, int, std::uint32_t revents, void* userdata);
  static int on_bus_end(sd_event_source*, int, std::uint32_t revents, void* userdata);
  void read_client();
  void write_bus_end();
  void read_bus_end();
  void write_client();
  void update_events();
  bool account_output(std::size_t added);
  void release_output(std::size_t removed);
  void fail(const std::string& why);

  UniqueFd client_;
  UniqueFd bus_end_;    // sd-bus's end until take_bus_end
  UniqueFd proxy_end_;  // ours
  StreamLimits limits_;
  std::function<void(const std::string&)> on_close_;
  InboundFilter filter_;
  std::string to_bus_;     // filtered client bytes sd-bus has not read yet
  std::string to_client_;  // sd-bus's bytes the client has not read yet
  bool stopped_ = false;
  EventSourcePtr client_source_;
  EventSourcePtr bus_end_source_;
};

}  // namespace xpu::api_proxy
