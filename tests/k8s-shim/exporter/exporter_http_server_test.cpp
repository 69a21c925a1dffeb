#include "k8s-shim/exporter/exporter_http_server.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/k8s-shim/exporter/http_test_client.h"
#include "tests/support/wait.h"

namespace shim::exporter {
namespace {

using ::testing::HasSubstr;
using testing::http_request;
using testing::send_request;

const ListenAddress kLoopbackAnyPort = *parse_listen_address("127.0.0.1:0");
constexpr const char* kBody =
    "# HELP xpu_exporter_xpud_up x\n# TYPE xpu_exporter_xpud_up gauge\nxpu_exporter_xpud_up 1\n";

// The server takes a body in two parts (MetricsBody), as the exporter builds it; most tests
// here need only one, made whole by `text` on every scrape.
ExporterHttpServer::MetricsBodySource whole(std::function<std::string()> text) {
  return [text = std::move(text)] {
    return MetricsBody{std::make_shared<const std::string>(text()), {}};
  };
}

class ExporterHttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = ExporterHttpServer::start(kLoopbackAnyPort, whole([this] {
                                               ++scrapes_;
                                               if (fail_) throw std::runtime_error("boom");
                                               return std::string(kBody);
                                             }));
    ASSERT_TRUE(started) << started.error();
    server_ = std::move(*started);
    ASSERT_NE(server_->port(), 0);
  }

  std::atomic<int> scrapes_{0};
  std::atomic<bool> fail_{false};
  std::unique_ptr<ExporterHttpServer> server_;
};

TEST_F(ExporterHttpServerTest, MetricsInPrometheusTextFormat) {
  auto reply = http_request(server_->port(), "GET", "/metrics");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(reply->body, kBody);
  EXPECT_EQ(scrapes_, 1);

  auto with_query = http_request(server_->port(), "GET", "/metrics?name[]=xpu_info");
  ASSERT_TRUE(with_query);
  EXPECT_EQ(with_query->status, 200);
  EXPECT_EQ(with_query->body, kBody);
}

TEST_F(ExporterHttpServerTest, LandingPageLinksMetrics) {
  auto reply = http_request(server_->port(), "GET", "/");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_THAT(reply->headers["content-type"], HasSubstr("text/html"));
  EXPECT_THAT(reply->body, HasSubstr("<a href=\"/metrics\">"));
  EXPECT_EQ(scrapes_, 0);
}

TEST(ExporterHttpServerPage, StatusPageFromItsSourceWithAPolicyThatForbidsScripts) {
  std::atomic<bool> fail{false};
  auto started =
      ExporterHttpServer::start(kLoopbackAnyPort, whole([] { return std::string(kBody); }),
                                HttpLimits{}, WebConfig{}, [&fail] {
                                  if (fail) throw std::runtime_error("boom");
                                  return std::string("<!DOCTYPE html><p>cards</p>");
                                });
  ASSERT_TRUE(started) << started.error();
  const auto port = (*started)->port();
  auto reply = http_request(port, "GET", "/");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->headers["content-type"], "text/html; charset=utf-8");
  EXPECT_EQ(reply->body, "<!DOCTYPE html><p>cards</p>");
  EXPECT_THAT(reply->headers["content-security-policy"], HasSubstr("default-src 'none'"));
  EXPECT_EQ(reply->headers["x-content-type-options"], "nosniff");
  EXPECT_EQ(reply->headers["cache-control"], "no-store");
  // /metrics is still the metrics, without the page's policy.
  auto metrics = http_request(port, "GET", "/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->body, kBody);
  EXPECT_EQ(metrics->headers.count("content-security-policy"), 0u);
  // A page that cannot be built is a 500, and the server keeps serving.
  fail = true;
  auto failed = http_request(port, "GET", "/");
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status, 500);
  auto after = http_request(port, "GET", "/healthz");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
}

TEST_F(ExporterHttpServerTest, HealthzSaysOk) {
  auto reply = http_request(server_->port(), "GET", "/healthz");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, "ok");
  EXPECT_EQ(scrapes_, 0);
}

TEST_F(ExporterHttpServerTest, UnknownPathsAre404) {
  for (const char* path : {"/nope", "/metrics/", "/metrics/x", "/healthz/x", "/index.html",
                           "/../etc/passwd", "/%00", "//metrics"}) {
    auto reply = http_request(server_->port(), "GET", path);
    ASSERT_TRUE(reply) << path;
    EXPECT_EQ(reply->status, 404) << path;
  }
  EXPECT_EQ(scrapes_, 0);
  // Query strings do not change the route.
  auto healthz = http_request(server_->port(), "GET", "/healthz?verbose=1");
  ASSERT_TRUE(healthz);
  EXPECT_EQ(healthz->status, 200);
}

TEST_F(ExporterHttpServerTest, MethodsOtherThanGetAndHeadAre405) {
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"}) {
    auto reply = http_request(server_->port(), method, "/metrics");
    ASSERT_TRUE(reply) << method;
    EXPECT_EQ(reply->status, 405) << method;
    EXPECT_EQ(reply->headers["allow"], "GET, HEAD") << method;
  }
  auto with_body = send_request(
      server_->port(),
      "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
  ASSERT_TRUE(with_body);
  EXPECT_EQ(with_body->status, 405);
  EXPECT_EQ(scrapes_, 0);
}

TEST_F(ExporterHttpServerTest, HeadGivesHeadersWithoutBody) {
  auto reply = http_request(server_->port(), "HEAD", "/metrics");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->headers["content-length"], std::to_string(std::string(kBody).size()));
  EXPECT_EQ(reply->body, "");
}

TEST_F(ExporterHttpServerTest, FailingScrapeIs500AndTheServerCarriesOn) {
  fail_ = true;
  auto reply = http_request(server_->port(), "GET", "/metrics");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 500);
  fail_ = false;
  reply = http_request(server_->port(), "GET", "/metrics");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
}

TEST_F(ExporterHttpServerTest, HostileRequestsGetAnErrorOrAClosedConnectionNeverACrash) {
  const std::string huge_header =
      "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: " + std::string(64 * 1024, 'a') + "\r\n\r\n";
  auto reply = send_request(server_->port(), huge_header);
  if (reply) {
    EXPECT_GE(reply->status, 400);
  }

  for (const std::string& junk :
       {std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11),
        std::string("GARBAGE\r\n\r\n"), std::string("GET\r\n\r\n"),
        std::string("GET /metrics HTTP/9.9\r\n\r\n"),
        std::string("GET /metrics HTTP/1.1\r\nContent-Length: -5\r\n\r\n"),
        std::string(100 * 1024, '\n')}) {
    auto junk_reply = send_request(server_->port(), junk, std::chrono::seconds(5));
    if (junk_reply) {
      EXPECT_GE(junk_reply->status, 400) << junk_reply->raw.substr(0, 200);
    }
  }
  EXPECT_EQ(scrapes_, 0);

  auto healthy = http_request(server_->port(), "GET", "/healthz");
  ASSERT_TRUE(healthy);
  EXPECT_EQ(healthy->status, 200);
}

TEST_F(ExporterHttpServerTest, ConcurrentScrapesAllAnswered) {
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 16; ++i)
    clients.emplace_back([&] {
      auto reply = http_request(server_->port(), "GET", "/metrics");
      if (reply && reply->status == 200 && reply->body == kBody) ++ok;
    });
  for (auto& client : clients) client.join();
  EXPECT_EQ(ok, 16);
  EXPECT_EQ(scrapes_, 16);
}

TEST(ExporterHttpServer, SilentClientsDoNotHoldUpScrapesAndAreClosedAfterTheIdleTimeout) {
  ExporterHttpServer::Limits limits;
  limits.threads = 1;
  limits.idle_timeout = std::chrono::seconds(1);
  auto server =
      ExporterHttpServer::start(kLoopbackAnyPort, whole([] { return std::string(kBody); }), limits);
  ASSERT_TRUE(server) << server.error();
  std::vector<xpu::UniqueFd> silent;
  for (int i = 0; i < 8; ++i) {
    silent.push_back(testing::connect_local((*server)->port(), std::chrono::seconds(5)));
    ASSERT_TRUE(silent.back().valid());
  }
  auto started = std::chrono::steady_clock::now();
  auto reply = http_request((*server)->port(), "GET", "/metrics");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(500));

  // The server closes each silent connection: recv sees the end of the stream (0), not the
  // 5-second receive timeout (-1).
  for (auto& fd : silent) {
    char byte;
    EXPECT_EQ(::recv(fd.get(), &byte, 1, 0), 0);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(4));
}

TEST(ExporterHttpServer, AHeadTricklingInIsCutAtTheHeadTimeoutThoughNeverIdle) {
  ExporterHttpServer::Limits limits;
  limits.idle_timeout = std::chrono::seconds(30);
  limits.head_timeout = std::chrono::milliseconds(800);
  auto server =
      ExporterHttpServer::start(kLoopbackAnyPort, whole([] { return std::string(kBody); }), limits);
  ASSERT_TRUE(server) << server.error();
  auto fd = testing::connect_local((*server)->port(), std::chrono::milliseconds(100));
  ASSERT_TRUE(fd.valid());
  const std::string head = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + std::string(200, 'a');
  const auto started = std::chrono::steady_clock::now();
  bool cut = false;
  // One byte every 50 ms: never idle, and the whole head would take 12 s.
  for (char byte : head) {
    if (::send(fd.get(), &byte, 1, MSG_NOSIGNAL) != 1) {
      cut = true;
      break;
    }
    char reply;
    const ssize_t got = ::recv(fd.get(), &reply, 1, MSG_DONTWAIT);
    if (got == 0) {
      cut = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_TRUE(cut);
  EXPECT_GE(took, std::chrono::milliseconds(750));
  EXPECT_LT(took, std::chrono::milliseconds(2500));

  // A keep-alive connection gets the same time for its next head, then is closed.
  auto keep = testing::connect_local((*server)->port(), std::chrono::seconds(5));
  ASSERT_TRUE(testing::send_all(keep.get(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  char buffer[512];
  ASSERT_GT(::recv(keep.get(), buffer, sizeof buffer, 0), 0);
  const auto answered = std::chrono::steady_clock::now();
  EXPECT_EQ(::recv(keep.get(), buffer, sizeof buffer, 0), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - answered, std::chrono::milliseconds(2500));
}

TEST(ExporterHttpServer, IPv6LoopbackAndDualStackAny) {
  auto v6 = ExporterHttpServer::start(*parse_listen_address("[::1]:0"),
                                      whole([] { return std::string(kBody); }));
  ASSERT_TRUE(v6) << v6.error();
  auto reply = testing::send_request_to(
      "::1", (*v6)->port(), "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  // [::1] is IPv6 only.
  EXPECT_FALSE(http_request((*v6)->port(), "GET", "/healthz"));

  auto any = ExporterHttpServer::start(*parse_listen_address("[::]:0"),
                                       whole([] { return std::string(kBody); }));
  ASSERT_TRUE(any) << any.error();
  for (const char* host : {"::1", "127.0.0.1"}) {
    auto served = testing::send_request_to(
        host, (*any)->port(), "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    ASSERT_TRUE(served) << host;
    EXPECT_EQ(served->status, 200) << host;
    EXPECT_EQ(served->body, kBody) << host;
  }
}

TEST(ExporterHttpServer, PortInUseIsAnErrorNamingTheAddress) {
  auto first = ExporterHttpServer::start(kLoopbackAnyPort, whole([] { return std::string(); }));
  ASSERT_TRUE(first) << first.error();
  ListenAddress taken = kLoopbackAnyPort;
  taken.port = (*first)->port();
  auto second = ExporterHttpServer::start(taken, whole([] { return std::string(); }));
  ASSERT_FALSE(second);
  EXPECT_THAT(second.error(), HasSubstr("127.0.0.1:" + std::to_string(taken.port)));
}

TEST(ExporterHttpServer, StopWaitsForTheScrapeInProgressAndIsQuick) {
  std::atomic<bool> entered{false}, finished{false};
  auto server = ExporterHttpServer::start(
      kLoopbackAnyPort, whole([&] {
        entered = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));  // a scrape that takes a while
        finished = true;
        return std::string(kBody);
      }));
  ASSERT_TRUE(server) << server.error();
  std::thread client([port = (*server)->port()] { (void)http_request(port, "GET", "/metrics"); });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!entered && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_TRUE(entered);

  auto stopping = std::chrono::steady_clock::now();
  server->reset();
  auto took = std::chrono::steady_clock::now() - stopping;
  EXPECT_TRUE(finished);  // the handler's state outlives no request
  EXPECT_LT(took, std::chrono::seconds(1));
  client.join();
}

// A body in two parts (kept bytes shared between scrapes, then the scrape's own tail) goes out
// as one body, as large as a 64-card scrape and then some, and the server lets go of the kept
// bytes once it has sent them.
TEST(ExporterHttpServerBody, KeptBytesAndTailAreSentAsOneBodyAndReleased) {
  std::string text;
  while (text.size() < 300 * 1024)
    text += "xpu_temperature_celsius{xpu=\"" + std::to_string(text.size()) + "\"} 45\n";
  const auto kept = std::make_shared<const std::string>(text);
  const std::string tail = "xpu_exporter_scrape_duration_seconds 0.00125\n";
  std::atomic<int> scrapes{0};
  const ExporterHttpServer::MetricsBodySource source = [&] {
    ++scrapes;
    return MetricsBody{kept, tail};
  };
  auto started = ExporterHttpServer::start(kLoopbackAnyPort, source);
  ASSERT_TRUE(started) << started.error();
  const auto port = (*started)->port();

  auto reply = http_request(port, "GET", "/metrics");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->headers["content-length"], std::to_string(text.size() + tail.size()));
  EXPECT_TRUE(reply->body == text + tail) << "a body of " << reply->body.size() << " bytes";
  auto head = http_request(port, "HEAD", "/metrics");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->headers["content-length"], std::to_string(text.size() + tail.size()));
  EXPECT_EQ(head->body, "");
  EXPECT_EQ(scrapes, 2);
  EXPECT_TRUE(xpu::test::wait_until([&] { return kept.use_count() == 1; }))
      << "the server still holds the kept bytes: " << kept.use_count() - 1 << " references";
}

}  // namespace
}  // namespace shim::exporter
