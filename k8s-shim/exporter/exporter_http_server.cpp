#include "k8s-shim/exporter/exporter_http_server.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <chrono>
#include <string_view>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/unique_fd.h"
#include "k8s-shim/exporter/metrics_renderer.h"

namespace shim::exporter {
namespace {

constexpr std::string_view kLandingPage =
    "<!DOCTYPE html>\n"
    "<html><head><title>XPU exporter</title></head>\n"
    "<body><h1>Kunlunxin XPU exporter</h1>\n"
    "<p><a href=\"/metrics\">Metrics</a> &middot; <a href=\"/healthz\">Health</a></p>\n"
    "</body></html>\n";

struct Response {
  int status = 200;
  std::string_view content_type = "text/plain; charset=utf-8";
  std::string body;
  bool allow_header = false;  // 405 says which methods are allowed
};

Response plain(int status, std::string body) {
  return Response{status, "text/plain; charset=utf-8", std::move(body)};
}

void send(mg_connection* connection, const Response& response, bool head_only) {
  mg_response_header_start(connection, response.status);
  mg_response_header_add(connection, "Content-Type", response.content_type.data(),
                         static_cast<int>(response.content_type.size()));
  const std::string length = std::to_string(response.body.size());
  mg_response_header_add(connection, "Content-Length", length.c_str(), -1);
  mg_response_header_add(connection, "Cache-Control", "no-store", -1);
  if (response.allow_header) mg_response_header_add(connection, "Allow", "GET, HEAD", -1);
  mg_response_header_send(connection);
  if (!head_only && !response.body.empty())
    mg_write(connection, response.body.data(), response.body.size());
}

// Opens and closes a connection without waiting on it.
void knock(const ListenAddress& address, std::uint16_t port) {
  const bool v6 = address.family == ListenAddress::Family::IPv6;
  xpu::UniqueFd fd(
      ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return;
  if (v6) {
    sockaddr_in6 peer{};
    peer.sin6_family = AF_INET6;
    peer.sin6_port = htons(port);
    inet_pton(AF_INET6, address.host.c_str(), &peer.sin6_addr);
    if (IN6_IS_ADDR_UNSPECIFIED(&peer.sin6_addr)) peer.sin6_addr = in6addr_loopback;
    ::connect(fd.get(), reinterpret_cast<sockaddr*>(&peer), sizeof peer);
  } else {
    sockaddr_in peer{};
    peer.sin_family = AF_INET;
    peer.sin_port = htons(port);
    if (address.family == ListenAddress::Family::Any ||
        inet_pton(AF_INET, address.host.c_str(), &peer.sin_addr) != 1 ||
        peer.sin_addr.s_addr == htonl(INADDR_ANY))
      peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::connect(fd.get(), reinterpret_cast<sockaddr*>(&peer), sizeof peer);
  }
}

// Keeps civetweb's own messages (bad requests, timeouts) out of stderr and in our log.
int log_civetweb_message(const mg_connection*, const char* message) {
  spdlog::debug("http: {}", message ? message : "");
  return 1;
}

}  // namespace

void ExporterHttpServer::ContextStopper::operator()(mg_context* context) const {
  mg_stop(context);
}

ExporterHttpServer::~ExporterHttpServer() {
  if (!context_) return;
  // civetweb's listener checks its stop flag only between 2-second polls; a connection wakes it,
  // so a SIGTERM ends the process at once rather than up to two seconds later.
  std::atomic<bool> stopped{false};
  std::thread waker([this, &stopped] {
    while (!stopped) {
      knock(wake_address_, port_);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  context_.reset();
  stopped = true;
  waker.join();
}

xpu::Status ExporterHttpServer::can_listen_on(const ListenAddress& listen) {
  if (listen.family == ListenAddress::Family::IPv6 && !mg_check_feature(MG_FEATURES_IPV6))
    return xpu::Error{"cannot listen on " + listen.to_string() +
                      ": the installed civetweb library was built without IPv6 support"};
  return xpu::ok_status();
}

xpu::Result<std::unique_ptr<ExporterHttpServer>> ExporterHttpServer::start(
    const ListenAddress& listen, MetricsSource metrics, Limits limits) {
  if (auto supported = can_listen_on(listen); !supported) return xpu::Error{supported.error()};

  std::unique_ptr<ExporterHttpServer> server(new ExporterHttpServer(std::move(metrics)));
  server->wake_address_ = listen;
  const std::string ports = listen.civetweb_port_spec();
  const std::string threads = std::to_string(limits.worker_threads);
  const std::string head_bytes = std::to_string(limits.max_request_head_bytes);
  const std::string timeout = std::to_string(limits.request_timeout_ms);
  const std::string queue = std::to_string(limits.worker_threads * 4);
  // No document_root: civetweb serves no files; every request goes to handle_request.
  std::array<const char*, 21> options = {"listening_ports",
                                         ports.c_str(),
                                         "num_threads",
                                         threads.c_str(),
                                         "max_request_size",
                                         head_bytes.c_str(),
                                         "request_timeout_ms",
                                         timeout.c_str(),
                                         "connection_queue",
                                         queue.c_str(),
                                         "enable_keep_alive",
                                         "yes",
                                         "keep_alive_timeout_ms",
                                         "1000",
                                         "tcp_nodelay",
                                         "1",
                                         "access_control_allow_origin",
                                         "",
                                         "decode_url",
                                         "no",
                                         nullptr};

  mg_callbacks callbacks{};
  callbacks.log_message = log_civetweb_message;
  std::array<char, 256> error_text{};
  unsigned error_code = 0;
  mg_error_data error{&error_code, error_text.data(), error_text.size()};
  mg_init_data init{&callbacks, server.get(), options.data()};
  server->context_.reset(mg_start2(&init, &error));
  if (!server->context_) {
    std::string cause = error_text[0] ? error_text.data() : "unknown error";
    return xpu::Error{"cannot listen on " + listen.to_string() + ": " + cause};
  }
  mg_set_request_handler(server->context_.get(), "/", &ExporterHttpServer::handle_request,
                         server.get());

  std::array<mg_server_port, 4> bound{};
  int count =
      mg_get_server_ports(server->context_.get(), static_cast<int>(bound.size()), bound.data());
  if (count < 1) return xpu::Error{"cannot listen on " + listen.to_string() + ": no port bound"};
  server->port_ = static_cast<std::uint16_t>(bound[0].port);
  return server;
}

int ExporterHttpServer::handle_request(mg_connection* connection, void* self) {
  try {
    return static_cast<ExporterHttpServer*>(self)->handle(connection);
  } catch (...) {  // nothing may unwind into civetweb's C code (bad_alloc while building a reply)
    mg_send_http_error(connection, 500, "%s", "internal error");
    return 500;
  }
}

int ExporterHttpServer::handle(mg_connection* connection) {
  const mg_request_info* request = mg_get_request_info(connection);
  const std::string_view method = request && request->request_method ? request->request_method : "";
  // Raw (still percent-encoded, not normalised) so that only the exact paths match.
  const std::string_view path = request && request->local_uri_raw ? request->local_uri_raw : "";
  const bool head = method == "HEAD";

  Response response;
  if (path != "/" && path != "/metrics" && path != "/healthz") {
    response = plain(404, "not found: try /metrics\n");
  } else if (method != "GET" && !head) {
    response = plain(405, "method not allowed: use GET or HEAD\n");
    response.allow_header = true;
  } else if (path == "/metrics") {
    try {
      response = Response{200, kTextContentType, metrics_()};
    } catch (const std::exception& e) {
      // A scrape fails; the server keeps going.
      spdlog::error("scrape failed: {}", e.what());
      response = plain(500, "scrape failed\n");
    } catch (...) {
      spdlog::error("scrape failed: unknown exception");
      response = plain(500, "scrape failed\n");
    }
  } else if (path == "/healthz") {
    response = plain(200, "ok");
  } else {
    response = Response{200, "text/html; charset=utf-8", std::string(kLandingPage)};
  }
  send(connection, response, head);
  return response.status;
}

}  // namespace shim::exporter
