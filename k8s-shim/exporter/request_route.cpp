#include "k8s-shim/exporter/request_route.h"

namespace shim::exporter {
namespace {

bool is_get_or_head(const RequestHead& head) {
  return head.method == "GET" || head.method == "HEAD";
}

}  // namespace

bool announces_body(const RequestHead& head) {
  return (head.content_length && *head.content_length != "0") || head.has_transfer_encoding;
}

bool needs_credentials(const RequestHead& head) {
  return !(head.path == "/healthz" && is_get_or_head(head));
}

Answer route_request(const RequestHead& head) {
  if (!needs_credentials(head)) return Answer::Health;
  if (head.path != "/" && head.path != "/metrics" && head.path != "/healthz")
    return Answer::NotFound;
  if (!is_get_or_head(head)) return Answer::MethodNotAllowed;
  if (announces_body(head)) return Answer::BodyNotAccepted;
  return head.path == "/" ? Answer::Page : Answer::Metrics;
}

}  // namespace shim::exporter
