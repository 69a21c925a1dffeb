// The exporter's HTTP endpoint (libmicrohttpd underneath): GET/HEAD on /metrics, / and /healthz,
// 404 for any other path, 405 for any other method; optionally TLS and basic auth from a web
// config. A few event-loop threads hold every connection, so idle or slow clients cost a socket
// and a small buffer each, never a thread; connections are bounded in total and per client
// address, request heads in size, and silent connections in time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "common/result.h"
#include "k8s-shim/exporter/listen_address.h"
#include "k8s-shim/exporter/listen_socket.h"
#include "k8s-shim/exporter/metrics_body_cache.h"
#include "k8s-shim/exporter/password_checker.h"
#include "k8s-shim/exporter/web_config.h"

namespace shim::exporter {

// How much the HTTP server gives each client; see the README for why these figures.
struct HttpLimits {
  int threads = 4;  // event-loop threads; a scrape in progress holds one of them
  // Per-connection buffer for the request line, the headers and the reply's headers; a head
  // that does not fit gets 431 (or 414 for the request line).
  std::size_t connection_memory_bytes = 32 * 1024;
  // A connection with no traffic for this long is closed: a silent client, an idle keep-alive,
  // a stalled TLS handshake.
  std::chrono::seconds idle_timeout{10};
  // A request head (and, with TLS, the handshake before it) must be complete within this of the
  // connection opening or of the previous reply, however steadily it trickles in.
  std::chrono::milliseconds head_timeout{10'000};
  unsigned max_connections = 2048;
  unsigned max_connections_per_ip = 64;  // beyond this an address's new connections are closed
  // Basic auth's bcrypt checks: their thread, queue (503 when full) and per-address failures
  // (429 past them).
  PasswordCheckLimits password_checks{};
};

class ExporterHttpServer {
 public:
  // Produces the /metrics body, in two parts (MetricsBody): the kept bytes are sent without a
  // copy, so a body built once can be served to every scrape until it changes, followed by the
  // scrape's own tail. Called from the server's threads, several at a time.
  using MetricsBodySource = std::function<MetricsBody()>;
  // Produces the `/` page (HTML), likewise; without one `/` is a static page of links.
  using PageSource = std::function<std::string()>;

  using Limits = HttpLimits;

  // Binds and starts serving before returning; an error names the address and the cause.
  static xpu::Result<std::unique_ptr<ExporterHttpServer>> start(const ListenAddress& listen,
                                                                MetricsBodySource metrics,
                                                                Limits limits = Limits{},
                                                                WebConfig web = WebConfig{},
                                                                PageSource status_page = {});

  // Serves from now on with `web` (new certificates, users): a new daemon takes over the same
  // socket, and the old one finishes the requests it holds. On error the old settings stay.
  xpu::Status reconfigure(WebConfig web);

  // Stops accepting and waits for the handlers in progress to return (their replies may be cut).
  ~ExporterHttpServer();
  ExporterHttpServer(const ExporterHttpServer&) = delete;
  ExporterHttpServer& operator=(const ExporterHttpServer&) = delete;

  // The bound port (the kernel's pick when started with port 0).
  std::uint16_t port() const { return socket_.port; }

 private:
  class Daemon;
  ExporterHttpServer(ListenAddress listen, ListenSocket socket, MetricsBodySource metrics,
                     PageSource status_page, Limits limits);
  xpu::Result<std::unique_ptr<Daemon>> start_daemon(WebConfig web);

  const ListenAddress listen_;
  ListenSocket socket_;  // outlives every daemon: declared before daemon_
  MetricsBodySource metrics_;
  PageSource status_page_;
  Limits limits_;
  std::mutex reconfiguring_;
  std::unique_ptr<Daemon> daemon_;
};

}  // namespace shim::exporter
