// CurlTransport against a real (plain HTTP) server, echo_server.py: what goes on the wire, the
// token re-read, and the limits (size, redirects, timeout, refused connections).
#include "k8s-shim/kube/http_transport.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/support/child_process.h"
#include "tests/support/wait.h"

namespace shim::kube {
namespace {

class CurlTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<xpu::test::ChildProcess>(
        std::vector<std::string>{
            "/usr/bin/python3", std::string(XPU_SOURCE_DIR) + "/tests/k8s-shim/kube/echo_server.py",
            (dir_.path() / "port").string()},
        dir_.path() / "server.log");
    ASSERT_TRUE(xpu::test::wait_until([&] {
      return std::filesystem::exists(dir_.path() / "port");
    })) << server_->output();
    std::ifstream in(dir_.path() / "port");
    in >> port_;
    xpu::test::write_file(token_file(), "token-one\n");
  }

  std::filesystem::path token_file() const { return dir_.path() / "token"; }

  std::unique_ptr<CurlTransport> transport(
      std::chrono::milliseconds timeout = std::chrono::milliseconds(3000)) {
    KubeApiConfig config{.server = "http://127.0.0.1:" + std::to_string(port_),
                         .token_file = token_file(),
                         .ca_file = {},
                         .timeout = timeout};
    auto made = CurlTransport::create(config);
    EXPECT_TRUE(made) << made.error();
    return made ? std::move(made).value() : nullptr;
  }

  xpu::test::TempDir dir_;
  std::unique_ptr<xpu::test::ChildProcess> server_;
  int port_ = 0;
};

TEST_F(CurlTransportTest, SendsMethodTargetHeadersAndBody) {
  auto http = transport();
  ASSERT_TRUE(http);
  auto got =
      http->send({"GET", "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=a%3Db", "", ""});
  ASSERT_TRUE(got) << got.error();
  EXPECT_EQ(got->status, 200);
  auto seen = nlohmann::json::parse(got->body);
  EXPECT_EQ(seen["method"], "GET");
  EXPECT_EQ(seen["path"], "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=a%3Db");
  EXPECT_EQ(seen["authorization"], "Bearer token-one");
  EXPECT_EQ(seen["accept"], "application/json");
  EXPECT_TRUE(seen["content_type"].is_null());

  for (std::string method : {"POST", "PUT"}) {
    auto sent = http->send({method, "/x", R"({"a":1})", ""});
    ASSERT_TRUE(sent) << sent.error();
    seen = nlohmann::json::parse(sent->body);
    EXPECT_EQ(seen["method"], method);
    EXPECT_EQ(seen["body"], R"({"a":1})");
    EXPECT_EQ(seen["content_type"], "application/json");
  }
  // Server-side apply: the body's type is the caller's.
  auto applied = http->send({"PATCH", "/x/status", R"({"a":1})", "application/apply-patch+yaml"});
  ASSERT_TRUE(applied) << applied.error();
  seen = nlohmann::json::parse(applied->body);
  EXPECT_EQ(seen["method"], "PATCH");
  EXPECT_EQ(seen["content_type"], "application/apply-patch+yaml");
  EXPECT_EQ(http->send({"POST", "/x", "{}", ""})->status, 201);
  auto deleted = http->send({"DELETE", "/x/y", "", ""});
  ASSERT_TRUE(deleted) << deleted.error();
  EXPECT_EQ(nlohmann::json::parse(deleted->body)["method"], "DELETE");
}

TEST_F(CurlTransportTest, ReReadsARotatedToken) {
  auto http = transport();
  ASSERT_TRUE(http);
  ASSERT_TRUE(http->send({"GET", "/", "", ""}));
  // A new file (as the kubelet's atomic swap makes), with a later mtime.
  xpu::test::write_file(dir_.path() / "token.new", "token-two");
  std::filesystem::last_write_time(
      dir_.path() / "token.new",
      std::filesystem::file_time_type::clock::now() + std::chrono::seconds(5));
  std::filesystem::rename(dir_.path() / "token.new", token_file());
  auto got = http->send({"GET", "/", "", ""});
  ASSERT_TRUE(got) << got.error();
  EXPECT_EQ(nlohmann::json::parse(got->body)["authorization"], "Bearer token-two");

  std::filesystem::remove(token_file());
  auto missing = http->send({"GET", "/", "", ""});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("token"), std::string::npos) << missing.error();
}

TEST_F(CurlTransportTest, AbortsAnOversizedAnswer) {
  auto http = transport();
  ASSERT_TRUE(http);
  auto got = http->send({"GET", "/big", "", ""});
  ASSERT_FALSE(got);
  EXPECT_NE(got.error().find("larger than"), std::string::npos) << got.error();
  // The handle is still usable afterwards.
  EXPECT_TRUE(http->send({"GET", "/", "", ""}));
}

TEST_F(CurlTransportTest, DoesNotFollowRedirects) {
  auto http = transport();
  ASSERT_TRUE(http);
  auto got = http->send({"GET", "/redirect", "", ""});
  ASSERT_TRUE(got) << got.error();
  EXPECT_EQ(got->status, 302);
}

TEST_F(CurlTransportTest, TimesOutWithTheUrlInTheError) {
  auto http = transport(std::chrono::milliseconds(300));
  ASSERT_TRUE(http);
  auto got = http->send({"GET", "/slow", "", ""});
  ASSERT_FALSE(got);
  EXPECT_NE(got.error().find("GET http://127.0.0.1:" + std::to_string(port_) + "/slow"),
            std::string::npos)
      << got.error();
}

TEST(CurlTransport, RefusedConnectionNamesTheUrl) {
  xpu::test::TempDir dir;
  xpu::test::write_file(dir.path() / "token", "t");
  // Port 1 on loopback: nothing listens there in a test environment.
  auto http = CurlTransport::create({.server = "http://127.0.0.1:1",
                                     .token_file = dir.path() / "token",
                                     .ca_file = {},
                                     .timeout = std::chrono::milliseconds(2000)});
  ASSERT_TRUE(http) << http.error();
  auto got = (*http)->send({"GET", "/apis", "", ""});
  ASSERT_FALSE(got);
  EXPECT_NE(got.error().find("http://127.0.0.1:1/apis"), std::string::npos) << got.error();
}

TEST(CurlTransport, RefusesOtherSchemes) {
  EXPECT_FALSE(
      CurlTransport::create({.server = "file:///etc/passwd", .token_file = {}, .ca_file = {}}));
  EXPECT_FALSE(
      CurlTransport::create({.server = "127.0.0.1:6443", .token_file = {}, .ca_file = {}}));
}

}  // namespace
}  // namespace shim::kube
