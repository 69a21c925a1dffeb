// What the exporter answers to a request, decided from what libmicrohttpd hands over of its head
// (method, path, the headers that announce a body) and nothing else, so that the rules are
// tested and fuzzed without a socket. exporter_http_server.cpp applies them to a connection.
#pragma once

#include <optional>
#include <string_view>

namespace shim::exporter {

struct RequestHead {
  std::string_view method;
  std::string_view path;  // as sent: not percent-decoded, so only the exact paths match
  std::optional<std::string_view> content_length;  // the header's value, when sent
  bool has_transfer_encoding = false;
};

enum class Answer {
  Health,            // 200 "ok": /healthz
  NotFound,          // 404: any other path than /, /metrics and /healthz
  MethodNotAllowed,  // 405, naming GET and HEAD: any other method on those paths
  BodyNotAccepted,   // 413: GET or HEAD announcing a body
  Page,              // 200: the / page
  Metrics,           // 200: the scrape
};

// GET and HEAD carry no body here: one announced (a Content-Length other than "0", or any
// Transfer-Encoding) is refused before it is read.
bool announces_body(const RequestHead& head);

// Whether the client's credentials (TLS client certificate, basic auth; when the web config asks
// for them) are checked before answering: for every request but the liveness probe's, GET or
// HEAD on /healthz, which tells nothing but that the server runs.
bool needs_credentials(const RequestHead& head);

// The answer to a request that needs no credentials or whose credentials passed.
Answer route_request(const RequestHead& head);

}  // namespace shim::exporter
