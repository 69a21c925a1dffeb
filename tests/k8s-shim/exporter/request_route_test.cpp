// The exporter's answer to each kind of request head (exporter_http_server_test checks the same
// rules end to end over a socket).
#include "k8s-shim/exporter/request_route.h"

#include <gtest/gtest.h>

namespace shim::exporter {
namespace {

RequestHead head(std::string_view method, std::string_view path) {
  return RequestHead{method, path, std::nullopt, false};
}

TEST(RequestRoute, ServesTheThreePathsToGetAndHead) {
  for (std::string_view method : {"GET", "HEAD"}) {
    EXPECT_EQ(route_request(head(method, "/metrics")), Answer::Metrics);
    EXPECT_EQ(route_request(head(method, "/")), Answer::Page);
    EXPECT_EQ(route_request(head(method, "/healthz")), Answer::Health);
  }
}

TEST(RequestRoute, OnlyTheLivenessProbeGoesWithoutCredentials) {
  EXPECT_FALSE(needs_credentials(head("GET", "/healthz")));
  EXPECT_FALSE(needs_credentials(head("HEAD", "/healthz")));
  EXPECT_TRUE(needs_credentials(head("POST", "/healthz")));
  EXPECT_TRUE(needs_credentials(head("GET", "/metrics")));
  EXPECT_TRUE(needs_credentials(head("GET", "/healthz/")));
  EXPECT_TRUE(needs_credentials(head("get", "/healthz")));
}

TEST(RequestRoute, PathsMatchExactlyAsSent) {
  for (std::string_view path : {"/metrics/", "/%6detrics", "/metrics?x=1", "//metrics", "", "*"})
    EXPECT_EQ(route_request(head("GET", path)), Answer::NotFound) << path;
}

TEST(RequestRoute, OtherMethodsAreNotAllowedOnKnownPaths) {
  EXPECT_EQ(route_request(head("POST", "/metrics")), Answer::MethodNotAllowed);
  EXPECT_EQ(route_request(head("DELETE", "/healthz")), Answer::MethodNotAllowed);
  EXPECT_EQ(route_request(head("get", "/")), Answer::MethodNotAllowed);
  EXPECT_EQ(route_request(head("POST", "/nowhere")), Answer::NotFound);
}

TEST(RequestRoute, AnAnnouncedBodyIsRefused) {
  RequestHead with_length = head("GET", "/metrics");
  with_length.content_length = "0";
  EXPECT_EQ(route_request(with_length), Answer::Metrics);
  with_length.content_length = "5";
  EXPECT_EQ(route_request(with_length), Answer::BodyNotAccepted);
  RequestHead chunked = head("HEAD", "/");
  chunked.has_transfer_encoding = true;
  EXPECT_EQ(route_request(chunked), Answer::BodyNotAccepted);
  // The probe is answered whatever it sends.
  chunked.path = "/healthz";
  EXPECT_EQ(route_request(chunked), Answer::Health);
}

}  // namespace
}  // namespace shim::exporter
