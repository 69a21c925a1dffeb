// The exporter's HTTP endpoint (civetweb underneath): GET/HEAD on /metrics, / and /healthz,
// 404 for any other path, 405 for any other method. Small fixed worker pool, bounded request
// size and time, no file serving.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/result.h"
#include "k8s-shim/exporter/listen_address.h"

struct mg_context;
struct mg_connection;

namespace shim::exporter {

class ExporterHttpServer {
 public:
  // Produces the /metrics body; called from the server's worker threads, several at a time.
  using MetricsSource = std::function<std::string()>;

  struct Limits {
    int worker_threads = 8;             // concurrent requests; more wait in the queue
    int max_request_head_bytes = 8192;  // request line + headers
    int request_timeout_ms = 3000;      // a slow client loses its connection after this
  };

  // Whether this build can listen there at all (civetweb may be built without IPv6).
  static xpu::Status can_listen_on(const ListenAddress& listen);

  // Binds and starts serving before returning; an error names the address and the cause.
  static xpu::Result<std::unique_ptr<ExporterHttpServer>> start(const ListenAddress& listen,
                                                                MetricsSource metrics,
                                                                Limits limits);
  static xpu::Result<std::unique_ptr<ExporterHttpServer>> start(const ListenAddress& listen,
                                                                MetricsSource metrics) {
    return start(listen, std::move(metrics), Limits{});
  }

  // Stops accepting and waits for the handlers in progress to return (their replies may be cut).
  ~ExporterHttpServer();
  ExporterHttpServer(const ExporterHttpServer&) = delete;
  ExporterHttpServer& operator=(const ExporterHttpServer&) = delete;

  // The bound port (the kernel's pick when started with port 0).
  std::uint16_t port() const { return port_; }

 private:
  explicit ExporterHttpServer(MetricsSource metrics) : metrics_(std::move(metrics)) {}
  static int handle_request(mg_connection* connection, void* self);
  int handle(mg_connection* connection);

  MetricsSource metrics_;
  struct ContextStopper {
    void operator()(mg_context* context) const;
  };
  std::unique_ptr<mg_context, ContextStopper> context_;
  std::uint16_t port_ = 0;
  ListenAddress wake_address_;
};

}  // namespace shim::exporter
