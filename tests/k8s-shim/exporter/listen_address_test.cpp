#include "k8s-shim/exporter/listen_address.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace shim::exporter {
namespace {

using ::testing::HasSubstr;

TEST(ListenAddress, PortOnlyListensOnEveryInterface) {
  auto address = parse_listen_address(":9507");
  ASSERT_TRUE(address) << address.error();
  EXPECT_EQ(address->family, ListenAddress::Family::Any);
  EXPECT_EQ(address->port, 9507);
  EXPECT_EQ(address->to_string(), ":9507");
}

TEST(ListenAddress, IPv4HostAndPort) {
  auto address = parse_listen_address("127.0.0.1:8080");
  ASSERT_TRUE(address) << address.error();
  EXPECT_EQ(address->family, ListenAddress::Family::IPv4);
  EXPECT_EQ(address->host, "127.0.0.1");
  EXPECT_EQ(address->port, 8080);
  EXPECT_EQ(address->to_string(), "127.0.0.1:8080");
}

TEST(ListenAddress, BracketedIPv6HostAndPort) {
  auto address = parse_listen_address("[::1]:9507");
  ASSERT_TRUE(address) << address.error();
  EXPECT_EQ(address->family, ListenAddress::Family::IPv6);
  EXPECT_EQ(address->host, "::1");
  EXPECT_EQ(address->to_string(), "[::1]:9507");

  auto any = parse_listen_address("[::]:1");
  ASSERT_TRUE(any) << any.error();
  EXPECT_EQ(any->host, "::");
}

TEST(ListenAddress, PortZeroAsksTheKernelForAFreePort) {
  auto address = parse_listen_address("127.0.0.1:0");
  ASSERT_TRUE(address) << address.error();
  EXPECT_EQ(address->port, 0);
}

TEST(ListenAddress, RejectsMalformedValuesNamingTheValue) {
  for (const char* text :
       {"", "9507", ":", "127.0.0.1", "127.0.0.1:", ":65536", ":-1", ":95x7", ": 9507",
        "localhost:9507", "256.0.0.1:80", "::1:9507", "[::1]", "[::1]9507", "[::1:9507", "[]:9507",
        "[127.0.0.1]:80", "[::1]:99999", "1.2.3.4:80:90"}) {
    auto address = parse_listen_address(text);
    EXPECT_FALSE(address) << "accepted '" << text << "'";
    if (!address) {
      EXPECT_THAT(address.error(), HasSubstr("'" + std::string(text) + "'"));
    }
  }
}

TEST(ListenAddress, ErrorsSayWhatIsWrong) {
  EXPECT_THAT(parse_listen_address("localhost:9507").error(), HasSubstr("not an IPv4 address"));
  EXPECT_THAT(parse_listen_address("::1:9507").error(), HasSubstr("brackets"));
  EXPECT_THAT(parse_listen_address(":70000").error(), HasSubstr("out of range"));
}

}  // namespace
}  // namespace shim::exporter
