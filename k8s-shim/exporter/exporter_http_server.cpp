#include "k8s-shim/exporter/exporter_http_server.h"

#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netinet/in.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <spdlog/spdlog.h>

#include "k8s-shim/exporter/head_deadline.h"
#include "k8s-shim/exporter/metrics_renderer.h"
#include "k8s-shim/exporter/request_route.h"
#include "k8s-shim/exporter/status_page.h"

namespace shim::exporter {
namespace {

constexpr std::string_view kLandingPage =
    "<!DOCTYPE html>\n"
    "<html><head><title>XPU exporter</title></head>\n"
    "<body><h1>Kunlunxin XPU exporter</h1>\n"
    "<p><a href=\"/metrics\">Metrics</a> &middot; <a href=\"/healthz\">Health</a></p>\n"
    "</body></html>\n";
constexpr std::string_view kPlainText = "text/plain; charset=utf-8";

struct Response {
  unsigned status = MHD_HTTP_OK;
  std::string_view content_type = kPlainText;
  std::string body;
  std::string_view content_security_policy = {};           // sent when not empty
  bool allow_header = false;                               // 405 says which methods are allowed
  bool ask_for_password = false;                           // 401 names the scheme and realm
  std::string_view retry_after = {};                       // sent when not empty (429, 503)
  std::optional<MetricsBody> metrics_body = std::nullopt;  // sent instead of `body` when set
};

Response plain(unsigned status, std::string body) {
  return Response{status, kPlainText, std::move(body)};
}

// A /metrics body is lent to MHD as it is, kept bytes and tail (no copy); MHD frees it through
// the callback once it has sent the reply.
MHD_Response* response_from_metrics_body(MetricsBody body) {
  auto held = std::make_unique<MetricsBody>(std::move(body));
  const MHD_IoVec parts[] = {{held->kept->data(), held->kept->size()},
                             {held->tail.data(), held->tail.size()}};
  MHD_Response* response = MHD_create_response_from_iovec(
      parts, held->tail.empty() ? 1 : 2, [](void* lent) { delete static_cast<MetricsBody*>(lent); },
      held.get());
  if (response != nullptr) (void)held.release();  // MHD's now, freed by the callback
  return response;
}

MHD_Result send(MHD_Connection* connection, const Response& reply) {
  // MHD leaves the body out of a reply to HEAD by itself, keeping Content-Length.
  MHD_Response* response =
      reply.metrics_body
          ? response_from_metrics_body(*reply.metrics_body)
          : MHD_create_response_from_buffer(reply.body.size(), const_cast<char*>(reply.body.data()),
                                            MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE,
                          std::string(reply.content_type).c_str());
  MHD_add_response_header(response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  if (reply.allow_header) MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  if (!reply.content_security_policy.empty()) {
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_SECURITY_POLICY,
                            std::string(reply.content_security_policy).c_str());
    MHD_add_response_header(response, MHD_HTTP_HEADER_X_CONTENT_TYPE_OPTIONS, "nosniff");
  }
  if (reply.ask_for_password)
    MHD_add_response_header(response, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                            "Basic realm=\"xpu-exporter\", charset=\"UTF-8\"");
  if (!reply.retry_after.empty())
    MHD_add_response_header(response, MHD_HTTP_HEADER_RETRY_AFTER,
                            std::string(reply.retry_after).c_str());
  const MHD_Result queued = MHD_queue_response(connection, reply.status, response);
  MHD_destroy_response(response);
  return queued;
}

// Keeps MHD's own messages (bad requests, timeouts, TLS failures) in our log at debug level:
// each one is a client's doing, and a hostile client must not be able to flood the journal.
void log_mhd_message(void*, const char* format, va_list arguments) {
  if (!spdlog::should_log(spdlog::level::debug)) return;
  char text[512];
  std::vsnprintf(text, sizeof text, format, arguments);
  std::string_view message(text);
  while (!message.empty() && message.back() == '\n') message.remove_suffix(1);
  spdlog::debug("http: {}", message);
}

// The path exactly as sent (no percent-decoding), so that only the three exact paths match.
size_t keep_url_escaped(void*, MHD_Connection*, char* text) {
  return std::strlen(text);
}

// Whether the client presented a certificate that chains to client_ca_file and may be used for
// TLS client authentication.
enum class PeerCertificate { Missing, Invalid, Valid };

PeerCertificate check_peer_certificate(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (info == nullptr || info->tls_session == nullptr) return PeerCertificate::Missing;
  auto session = static_cast<gnutls_session_t>(info->tls_session);
  unsigned count = 0;
  if (gnutls_certificate_get_peers(session, &count) == nullptr || count == 0)
    return PeerCertificate::Missing;
  gnutls_typed_vdata_st purpose{};
  purpose.type = GNUTLS_DT_KEY_PURPOSE_OID;
  purpose.data = reinterpret_cast<unsigned char*>(const_cast<char*>(GNUTLS_KP_TLS_WWW_CLIENT));
  unsigned status = 0;
  if (gnutls_certificate_verify_peers(session, &purpose, 1, &status) != GNUTLS_E_SUCCESS ||
      status != 0)
    return PeerCertificate::Invalid;
  return PeerCertificate::Valid;
}

// The client's address as text, the key of its failure count.
std::string client_address(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (info == nullptr || info->client_addr == nullptr) return {};
  char text[INET6_ADDRSTRLEN] = {};
  const sockaddr* address = info->client_addr;
  if (address->sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, text, sizeof text);
  else if (address->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, text,
              sizeof text);
  return text;
}

// An unknown user is checked at the costliest hash's cost: a user whose hash is cheaper answers
// faster, and timing then tells that name exists.
void warn_of_mixed_costs(const std::map<std::string, std::string>& users) {
  std::set<unsigned> costs;
  for (const auto& [user, hash] : users) costs.insert(bcrypt_cost(hash));
  if (costs.size() > 1)
    spdlog::warn(
        "web config: the basic_auth_users hashes have {} different bcrypt costs ({} to {}): the "
        "users with cheaper ones can be told apart by timing; give them all one cost",
        costs.size(), *costs.begin(), *costs.rbegin());
}

// What one request carries between MHD's calls of on_request: made at the first call (the head
// only), freed when the request completes.
struct RequestState {
  // The password check of a suspended request. Whichever of the checker's thread (the verdict)
  // and the event thread (the suspension) comes second resumes the request: MHD forbids resuming
  // a connection that is not suspended.
  enum Phase { Checking, Suspended, Decided };
  std::atomic<Phase> phase{Checking};
  std::optional<PasswordVerdict> verdict;  // written before phase becomes Decided
};

// What route_request needs of the request's head.
RequestHead request_head(MHD_Connection* connection, std::string_view path,
                         std::string_view method) {
  auto header = [connection](const char* name) {
    return MHD_lookup_connection_value(connection, MHD_HEADER_KIND, name);
  };
  RequestHead head{method, path, std::nullopt, false};
  if (const char* length = header(MHD_HTTP_HEADER_CONTENT_LENGTH)) head.content_length = length;
  head.has_transfer_encoding = header(MHD_HTTP_HEADER_TRANSFER_ENCODING) != nullptr;
  return head;
}

}  // namespace

// One libmicrohttpd daemon with one immutable set of web settings. Reconfiguring replaces the
// whole daemon, so a request never sees half of an old and half of a new configuration.
class ExporterHttpServer::Daemon {
 public:
  Daemon(const MetricsBodySource& metrics, const PageSource& status_page, WebConfig web,
         std::chrono::milliseconds head_timeout)
      : metrics_(metrics),
        status_page_(status_page),
        web_(std::move(web)),
        head_deadline_(head_timeout) {}

  // A daemon replaced by reconfigure(): quiesced first, so MHD leaves the listening socket (ours,
  // and the new daemon's) open when it stops.
  ~Daemon() {
    if (daemon_ == nullptr) return;
    MHD_quiesce_daemon(daemon_);
    stop_password_checks();
    MHD_stop_daemon(daemon_);
  }

  // The last daemon, when the server ends: stopped without quiescing, so MHD closes the
  // listening socket itself. MHD_quiesce_daemon's epoll bookkeeping races the pool's workers
  // and can abort the process ("Failed to remove listen FD from epoll set", seen under ASan at
  // the end of a test); this path has no need for it.
  void stop_closing_the_listen_socket() {
    stop_password_checks();
    if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
    daemon_ = nullptr;
  }
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  xpu::Status start(int listen_fd, const Limits& limits) {
    unsigned flags =
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    if (!web_.basic_auth_users.empty()) {
      checker_ = std::make_unique<PasswordChecker>(web_.basic_auth_users, limits.password_checks);
      flags |= MHD_ALLOW_SUSPEND_RESUME;
      warn_of_mixed_costs(web_.basic_auth_users);
    }
    std::vector<MHD_OptionItem> options = {
        {MHD_OPTION_LISTEN_SOCKET, listen_fd, nullptr},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<intptr_t>(limits.connection_memory_bytes),
         nullptr},
        {MHD_OPTION_CONNECTION_TIMEOUT, static_cast<intptr_t>(limits.idle_timeout.count()),
         nullptr},
        {MHD_OPTION_CONNECTION_LIMIT, limits.max_connections, nullptr},
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, limits.max_connections_per_ip, nullptr},
        // Options that take a function and its argument carry the function in `value`.
        {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&log_mhd_message), nullptr},
        {MHD_OPTION_UNESCAPE_CALLBACK, reinterpret_cast<intptr_t>(&keep_url_escaped), nullptr},
        {MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&Daemon::on_connection), this},
        {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&Daemon::on_completed), this},
    };
    // MHD warns about a pool of one; one thread is simply no pool.
    if (limits.threads > 1)
      options.push_back({MHD_OPTION_THREAD_POOL_SIZE, limits.threads, nullptr});
    if (web_.tls) {
      flags |= MHD_USE_TLS;
      options.push_back(
          {MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(web_.tls->cert_pem.c_str())});
      options.push_back(
          {MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(web_.tls->key_pem.c_str())});
      // With a trust list MHD asks each client for a certificate without requiring one; the
      // check is ours, per request, so that /healthz stays open to the kubelet's probes.
      if (!web_.tls->client_ca_pem.empty())
        options.push_back(
            {MHD_OPTION_HTTPS_MEM_TRUST, 0, const_cast<char*>(web_.tls->client_ca_pem.c_str())});
      options.push_back(
          {MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(web_.tls->priorities.c_str())});
    }
    options.push_back({MHD_OPTION_END, 0, nullptr});
    daemon_ = MHD_start_daemon(flags, 0, nullptr, nullptr, &Daemon::on_request, this,
                               MHD_OPTION_ARRAY, options.data(), MHD_OPTION_END);
    if (daemon_ == nullptr)
      return xpu::Error{web_.tls ? "the HTTP server did not start: the TLS certificate or key "
                                   "was refused (see the debug log)"
                                 : "the HTTP server did not start (see the debug log)"};
    return xpu::ok_status();
  }

 private:
  // MHD must not stop with a request suspended: the checker answers what waits (Busy), which
  // resumes it, and answers Busy at once to what comes after.
  void stop_password_checks() {
    if (checker_) checker_->stop();
  }

  static MHD_Result on_request(void* self, MHD_Connection* connection, const char* url,
                               const char* method, const char*, const char*, size_t*,
                               void** request_state) {
    // MHD closes a connection whose reply was queued at the first call, when it cannot know
    // yet whether a body follows. A request without one is answered at the second call, so the
    // connection stays open for the next scrape; one with a body is refused at the first call
    // and closed, without reading what it sends.
    auto& daemon = *static_cast<Daemon*>(self);
    try {
      auto* state = static_cast<RequestState*>(*request_state);
      if (state == nullptr) {
        daemon.head_deadline_.head_received(connection);
        state = new RequestState;  // freed by on_completed
        *request_state = state;
        if (!announces_body(request_head(connection, url, method))) return MHD_YES;
      }
      auto reply = daemon.answer(connection, url, method, *state);
      if (!reply) return MHD_YES;  // suspended until its password is checked
      return send(connection, *reply);
    } catch (...) {   // nothing may unwind into MHD's C code (bad_alloc while building a reply)
      return MHD_NO;  // MHD closes the connection
    }
  }

  static void on_connection(void* self, MHD_Connection* connection, void**,
                            MHD_ConnectionNotificationCode code) {
    auto& deadline = static_cast<Daemon*>(self)->head_deadline_;
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) return deadline.closed(connection);
    const MHD_ConnectionInfo* info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (info != nullptr) deadline.opened(connection, info->connect_fd);
  }

  static void on_completed(void* self, MHD_Connection* connection, void** request_state,
                           MHD_RequestTerminationCode) {
    delete static_cast<RequestState*>(*request_state);
    *request_state = nullptr;
    static_cast<Daemon*>(self)->head_deadline_.reply_sent(connection);
  }

  // A body is never read: a request that announces one is answered (with an error) before it
  // arrives, and MHD then closes the connection. Nothing: the request is suspended while its
  // password is checked, and MHD calls again when it is resumed.
  std::optional<Response> answer(MHD_Connection* connection, std::string_view path,
                                 std::string_view method, RequestState& state) {
    const RequestHead head = request_head(connection, path, method);
    if (needs_credentials(head)) {
      if (auto refused = check_certificate(connection)) return refused;
      if (checker_) {
        if (!state.verdict) {
          auto verdict = ask_checker(connection, state);
          if (!verdict) return std::nullopt;
          state.verdict = verdict;
        }
        if (auto refused = refusal_for(*state.verdict)) return refused;
      }
    }
    switch (route_request(head)) {
      case Answer::Health:
        return plain(MHD_HTTP_OK, "ok");
      case Answer::NotFound:
        return plain(MHD_HTTP_NOT_FOUND, "not found: try /metrics\n");
      case Answer::MethodNotAllowed: {
        Response response =
            plain(MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed: use GET or HEAD\n");
        response.allow_header = true;
        return response;
      }
      case Answer::BodyNotAccepted:
        return plain(MHD_HTTP_CONTENT_TOO_LARGE, "a request body is not accepted here\n");
      case Answer::Page:
      case Answer::Metrics:
        break;
    }
    if (path == "/" && !status_page_)
      return Response{MHD_HTTP_OK, kHtmlContentType, std::string(kLandingPage)};
    try {
      if (path == "/") {
        Response page{MHD_HTTP_OK, kHtmlContentType, status_page_()};
        page.content_security_policy = kStatusPageContentSecurityPolicy;
        return page;
      }
      Response scrape{MHD_HTTP_OK, kTextContentType, {}};
      scrape.metrics_body = metrics_();
      if (!scrape.metrics_body->kept)
        throw std::runtime_error("the metrics source returned no body");
      return scrape;
    } catch (const std::exception& e) {
      // A scrape fails; the server keeps going.
      spdlog::error("{} failed: {}", path == "/" ? "the / page" : "scrape", e.what());
    } catch (...) {
      spdlog::error("{} failed: unknown exception", path == "/" ? "the / page" : "scrape");
    }
    return plain(MHD_HTTP_INTERNAL_SERVER_ERROR, "scrape failed\n");
  }

  std::optional<Response> check_certificate(MHD_Connection* connection) const {
    if (!web_.tls || web_.tls->client_auth == ClientAuth::None) return std::nullopt;
    const PeerCertificate peer = check_peer_certificate(connection);
    if (peer == PeerCertificate::Invalid)
      return plain(MHD_HTTP_FORBIDDEN, "client certificate not accepted\n");
    if (peer == PeerCertificate::Missing && web_.tls->client_auth == ClientAuth::RequireAndVerify)
      return plain(MHD_HTTP_FORBIDDEN, "client certificate required\n");
    return std::nullopt;
  }

  // The verdict when the checker decides at once (or there is nothing to check). Otherwise the
  // check is queued and the request suspended until the verdict resumes it: nothing.
  std::optional<PasswordVerdict> ask_checker(MHD_Connection* connection, RequestState& state) {
    char* password = nullptr;
    char* user = MHD_basic_auth_get_username_password(connection, &password);
    std::optional<PasswordVerdict> verdict = PasswordVerdict::Rejected;  // no credentials sent
    if (user != nullptr && password != nullptr)
      verdict = checker_->check(
          client_address(connection), user, password,
          [connection, &state](PasswordVerdict decided) {
            state.verdict = decided;
            if (state.phase.exchange(RequestState::Decided) == RequestState::Suspended)
              MHD_resume_connection(connection);
          });
    if (user != nullptr) MHD_free(user);
    if (password != nullptr) MHD_free(password);
    if (!verdict) {
      MHD_suspend_connection(connection);
      // A verdict that came before the suspension left the resuming to this thread.
      if (state.phase.exchange(RequestState::Suspended) == RequestState::Decided)
        MHD_resume_connection(connection);
    }
    return verdict;
  }

  static std::optional<Response> refusal_for(PasswordVerdict verdict) {
    switch (verdict) {
      case PasswordVerdict::Accepted:
        return std::nullopt;
      case PasswordVerdict::Rejected: {
        Response response = plain(MHD_HTTP_UNAUTHORIZED, "unauthorized\n");
        response.ask_for_password = true;
        return response;
      }
      case PasswordVerdict::Busy: {
        Response response =
            plain(MHD_HTTP_SERVICE_UNAVAILABLE, "too many password checks waiting: retry\n");
        response.retry_after = "1";
        return response;
      }
      case PasswordVerdict::TooManyFailures: {
        Response response =
            plain(MHD_HTTP_TOO_MANY_REQUESTS, "too many wrong passwords from this address\n");
        response.retry_after = "60";
        return response;
      }
    }
    return std::nullopt;
  }

  const MetricsBodySource& metrics_;
  const PageSource& status_page_;
  const WebConfig web_;
  HeadDeadline head_deadline_;  // outlives the MHD daemon, which calls into it until stopped
  std::unique_ptr<PasswordChecker> checker_;  // with basic auth; likewise outlives the daemon
  MHD_Daemon* daemon_ = nullptr;
};

ExporterHttpServer::ExporterHttpServer(ListenAddress listen, ListenSocket socket,
                                       MetricsBodySource metrics, PageSource status_page,
                                       Limits limits)
    : listen_(std::move(listen)),
      socket_(std::move(socket)),
      metrics_(std::move(metrics)),
      status_page_(std::move(status_page)),
      limits_(limits) {}

ExporterHttpServer::~ExporterHttpServer() {
  if (daemon_ == nullptr) return;
  // MHD closes the descriptor on this path: it is MHD's from here on.
  [[maybe_unused]] const int handed_over = socket_.fd.release();
  daemon_->stop_closing_the_listen_socket();
  daemon_.reset();
}

xpu::Result<std::unique_ptr<ExporterHttpServer::Daemon>> ExporterHttpServer::start_daemon(
    WebConfig web) {
  auto daemon =
      std::make_unique<Daemon>(metrics_, status_page_, std::move(web), limits_.head_timeout);
  if (auto started = daemon->start(socket_.fd.get(), limits_); !started)
    return xpu::Error{"cannot serve on " + listen_.to_string() + ": " + started.error()};
  return daemon;
}

xpu::Result<std::unique_ptr<ExporterHttpServer>> ExporterHttpServer::start(
    const ListenAddress& listen, MetricsBodySource metrics, Limits limits, WebConfig web,
    PageSource status_page) {
  auto socket = open_listen_socket(listen);
  if (!socket) return xpu::Error{socket.error()};
  std::unique_ptr<ExporterHttpServer> server(new ExporterHttpServer(
      listen, std::move(*socket), std::move(metrics), std::move(status_page), limits));
  auto daemon = server->start_daemon(std::move(web));
  if (!daemon) return xpu::Error{daemon.error()};
  server->daemon_ = std::move(*daemon);
  return server;
}

xpu::Status ExporterHttpServer::reconfigure(WebConfig web) {
  std::lock_guard lock(reconfiguring_);
  // Both daemons poll the socket for a moment; either may take a new connection, and each
  // finishes what it took. Then the old one stops.
  auto fresh = start_daemon(std::move(web));
  if (!fresh) return xpu::Error{fresh.error()};
  std::swap(daemon_, *fresh);
  return xpu::ok_status();
}

}  // namespace shim::exporter
