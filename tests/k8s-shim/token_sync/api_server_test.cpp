#include "k8s-shim/token_sync/api_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace shim::token_sync {
namespace {

using ::testing::HasSubstr;

xpu::Result<std::string> url(std::optional<std::string> host,
                             std::optional<std::string> port = "443") {
  return api_server_url(ApiServerEnvironment{std::move(host), std::move(port)});
}

TEST(ApiServerUrl, Ipv4Host) {
  auto result = url("10.96.0.1", "443");
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(*result, "https://10.96.0.1:443");
}

TEST(ApiServerUrl, Ipv6HostGoesInBrackets) {
  auto result = url("fd00:10:96::1", "6443");
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(*result, "https://[fd00:10:96::1]:6443");
}

TEST(ApiServerUrl, AlreadyBracketedIpv6IsNotDoubled) {
  auto result = url("[::1]");
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(*result, "https://[::1]:443");
}

TEST(ApiServerUrl, DnsName) {
  auto result = url("kubernetes.default.svc.cluster.local");
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(*result, "https://kubernetes.default.svc.cluster.local:443");
}

TEST(ApiServerUrl, MissingHostNamesTheVariable) {
  auto result = url(std::nullopt);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.error(), HasSubstr("KUBERNETES_SERVICE_HOST is not set"));
}

TEST(ApiServerUrl, MissingPortNamesTheVariable) {
  auto result = url("10.0.0.1", std::nullopt);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.error(), HasSubstr("KUBERNETES_SERVICE_PORT is not set"));
}

class BadHost : public ::testing::TestWithParam<const char*> {};

TEST_P(BadHost, IsAnErrorNamingVariableAndValue) {
  auto result = url(std::string(GetParam()));
  ASSERT_FALSE(result.ok()) << "accepted '" << GetParam() << "' as " << *result;
  EXPECT_THAT(result.error(), HasSubstr("KUBERNETES_SERVICE_HOST='"));
}

INSTANTIATE_TEST_SUITE_P(
    Values, BadHost,
    ::testing::Values("", "999.1.1.1", "10.0.0", "10.0.0.1.", "01.2.3.4", "fe80::1%eth0",
                      "fd00::1::2", "[10.0.0.1]", "[fd00::1", "my_host", "-leading.example",
                      "trailing-.example", "two..dots", "has space", "evil\nhost", "host/path",
                      "host:443", "https://10.0.0.1",
                      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.example"));

TEST(ApiServerUrl, ControlCharactersInTheValueAreEscapedInTheError) {
  auto result = url(std::string("evil\nhost"));
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.error(), HasSubstr("evil\\x0ahost"));
  EXPECT_EQ(result.error().find('\n'), std::string::npos);
}

class BadPort : public ::testing::TestWithParam<const char*> {};

TEST_P(BadPort, IsAnErrorNamingVariableAndValue) {
  auto result = url("10.0.0.1", std::string(GetParam()));
  ASSERT_FALSE(result.ok()) << "accepted port '" << GetParam() << "'";
  EXPECT_THAT(result.error(),
              HasSubstr(std::string("KUBERNETES_SERVICE_PORT='") + GetParam() + "'"));
}

INSTANTIATE_TEST_SUITE_P(Values, BadPort,
                         ::testing::Values("", "0", "65536", "443x", "-1", " 443", "https"));

}  // namespace
}  // namespace shim::token_sync
