// The health stream through a real gRPC channel on a unix socket, called by the method path the
// kubelet dials.
#include "k8s-shim/dra/kubelet/health_service.h"

#include <atomic>
#include <future>

#include <gtest/gtest.h>

#include "k8s-shim/grpc/unix_socket_server.h"
#include "k8s-shim/printable.h"
#include "podresources_v1.pb.h"
#include "tests/k8s-shim/dra/kubelet/kubelet_client.h"
#include "tests/support/card_builder.h"
#include "tests/support/child_process.h"
#include "tests/support/wait.h"

namespace shim::dra {
namespace {

using Stream = grpc::ClientReader<healthpb::NodeWatchResourcesResponse>;
using StreamV1 = grpc::ClientReader<healthv1pb::NodeWatchResourcesResponse>;
using std::chrono::seconds;

using xpu::test::card;

// What a message says, device by device: "pool/name HEALTH@time".
std::vector<std::string> summary(const healthpb::NodeWatchResourcesResponse& response) {
  std::vector<std::string> lines;
  for (const auto& device : response.devices())
    lines.push_back(device.device().pool_name() + "/" + device.device().device_name() + " " +
                    healthpb::HealthStatus_Name(device.health()) + "@" +
                    std::to_string(device.last_updated_time()));
  return lines;
}

// The same for v1, with the message when there is one: "pool/name HEALTH@time: message".
std::vector<std::string> summary(const healthv1pb::NodeWatchResourcesResponse& response) {
  std::vector<std::string> lines;
  for (const auto& device : response.devices()) {
    std::string line = device.device().pool_name() + "/" + device.device().device_name() + " " +
                       healthv1pb::HealthStatus_Name(device.health()) + "@" +
                       std::to_string(device.last_updated_time());
    if (!device.message().empty()) line += ": " + device.message();
    // Unset means the kubelet's default timeout, which our resend interval is chosen for.
    if (device.health_check_timeout_seconds() != 0) line += " timeout set";
    lines.push_back(line);
  }
  return lines;
}

struct Fixture {
  xpu::test::TempDir dir;
  std::atomic<std::int64_t> clock{1000};  // unix seconds the service stamps changes with
  HealthService service;
  std::unique_ptr<UnixSocketServer> server;
  std::shared_ptr<grpc::Channel> channel;

  explicit Fixture(std::chrono::milliseconds resend = HealthService::kResendInterval)
      : service("node-a", resend,
                [this] { return std::chrono::system_clock::time_point(seconds(clock.load())); }) {
    auto started = UnixSocketServer::start(dir.path() / "dra.sock", service.grpc_services());
    if (!started) throw std::runtime_error(started.error());
    server = std::move(*started);
    channel = test::kubelet_channel(dir.path() / "dra.sock");
  }
  ~Fixture() {
    service.close_all();
    server.reset();
  }

  // A stream whose reads fail rather than hang once the deadline passes.
  std::unique_ptr<Stream> watch(grpc::ClientContext& context) {
    context.set_deadline(std::chrono::system_clock::now() + seconds(20));
    return test::open_stream<healthpb::NodeWatchResourcesResponse>(
        channel, test::kWatchHealthPath, &context, healthpb::NodeWatchResourcesRequest{});
  }
  std::unique_ptr<StreamV1> watch_v1(grpc::ClientContext& context) {
    context.set_deadline(std::chrono::system_clock::now() + seconds(20));
    return test::open_stream<healthv1pb::NodeWatchResourcesResponse>(
        channel, test::kWatchHealthV1Path, &context, healthv1pb::NodeWatchResourcesRequest{});
  }
};

template <typename Response>
std::vector<std::string> next(grpc::ClientReader<Response>& stream) {
  Response response;
  if (!stream.Read(&response)) return {"<stream ended>"};
  return summary(response);
}

TEST(dra_HealthService, FirstMessageListsEveryCardWithItsHealth) {
  Fixture f;
  f.service.update({card(0), card(1).unhealthy(), card(2).virtual_function()});
  grpc::ClientContext context;
  auto stream = f.watch(context);
  EXPECT_EQ(next(*stream),
            (std::vector<std::string>{"node-a/xpu-0 HEALTHY@1000", "node-a/xpu-1 UNHEALTHY@1000",
                                      "node-a/xpu-2 HEALTHY@1000"}));
}

// Not published, so not reported either: the kubelet would hold health for a device it has
// no slice entry for. Its virtual functions are published, and reported.
TEST(dra_HealthService, APhysicalFunctionWithSriovOnIsLeftOut) {
  Fixture f;
  xpu::DeviceInfo pf = card(0);
  pf.sriov_enabled = true;
  f.service.update({pf, card(1), card(2).virtual_function()});
  grpc::ClientContext context;
  auto stream = f.watch(context);
  EXPECT_EQ(next(*stream),
            (std::vector<std::string>{"node-a/xpu-1 HEALTHY@1000", "node-a/xpu-2 HEALTHY@1000"}));
  grpc::ClientContext context_v1;
  auto stream_v1 = f.watch_v1(context_v1);
  EXPECT_EQ(next(*stream_v1),
            (std::vector<std::string>{"node-a/xpu-1 HEALTHY@1000", "node-a/xpu-2 HEALTHY@1000"}));
}

TEST(dra_HealthService, AHealthChangeSendsUnhealthyWithANewerTime) {
  Fixture f;
  f.service.update({card(0), card(1)});
  grpc::ClientContext context;
  auto stream = f.watch(context);
  ASSERT_EQ(next(*stream).size(), 2u);
  f.clock = 1060;
  f.service.update({card(0).unhealthy(), card(1)});
  // The card that did not change keeps the time of its own last change.
  EXPECT_EQ(next(*stream),
            (std::vector<std::string>{"node-a/xpu-0 UNHEALTHY@1060", "node-a/xpu-1 HEALTHY@1000"}));
}

TEST(dra_HealthService, RapidUpdatesEndWithTheLatestState) {
  Fixture f;
  f.service.update({card(0)});
  grpc::ClientContext context;
  auto stream = f.watch(context);
  ASSERT_EQ(next(*stream), (std::vector<std::string>{"node-a/xpu-0 HEALTHY@1000"}));
  for (int i = 1; i <= 200; ++i) {
    f.clock = 1000 + i;
    f.service.update({card(0).healthy(i % 2 == 0), card(1)});
  }
  // Intermediate states may collapse; the last one must arrive (reads end at the deadline).
  const std::vector<std::string> latest{"node-a/xpu-0 HEALTHY@1200", "node-a/xpu-1 HEALTHY@1001"};
  std::vector<std::string> seen;
  while (seen != latest && seen != std::vector<std::string>{"<stream ended>"}) seen = next(*stream);
  EXPECT_EQ(seen, latest);
}

TEST(dra_HealthService, ResendsSoTheKubeletDoesNotTimeCardsOut) {
  Fixture f(std::chrono::milliseconds(50));
  f.service.update({card(0)});
  grpc::ClientContext context;
  auto stream = f.watch(context);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(next(*stream), (std::vector<std::string>{"node-a/xpu-0 HEALTHY@1000"}));
}

TEST(dra_HealthService, AClientCancelEndsTheServerSidePromptly) {
  Fixture f;
  f.service.update({card(0)});
  grpc::ClientContext context;
  auto stream = f.watch(context);
  ASSERT_EQ(next(*stream).size(), 1u);
  EXPECT_EQ(f.service.open_streams(), 1u);
  context.TryCancel();
  EXPECT_TRUE(xpu::test::wait_until([&] { return f.service.open_streams() == 0; }, seconds(2)));
}

TEST(dra_HealthService, CloseAllEndsTheStreamAndLaterStreamsAreServed) {
  Fixture f;
  f.service.update({card(0)});
  grpc::ClientContext context;
  auto stream = f.watch(context);
  ASSERT_EQ(next(*stream).size(), 1u);
  const auto before = std::chrono::steady_clock::now();
  f.service.close_all();
  EXPECT_EQ(next(*stream), std::vector<std::string>{"<stream ended>"});
  EXPECT_LT(std::chrono::steady_clock::now() - before, seconds(2));
  EXPECT_TRUE(stream->Finish().ok());  // the kubelet sees EOF, not an error

  grpc::ClientContext again;
  auto second = f.watch(again);
  EXPECT_EQ(next(*second), (std::vector<std::string>{"node-a/xpu-0 HEALTHY@1000"}));
}

TEST(dra_HealthService, AFifthConcurrentStreamIsRefused) {
  Fixture f;
  f.service.update({card(0)});
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<Stream>> streams;
  for (std::size_t i = 0; i < HealthService::kMaxStreams; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    streams.push_back(f.watch(*contexts.back()));
    // Its first message means the server counts it.
    ASSERT_EQ(next(*streams.back()).size(), 1u);
  }
  grpc::ClientContext context;
  auto refused = f.watch(context);
  EXPECT_EQ(next(*refused), std::vector<std::string>{"<stream ended>"});
  EXPECT_EQ(refused->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);

  // A slot frees when a stream goes.
  contexts.front()->TryCancel();
  ASSERT_TRUE(xpu::test::wait_until(
      [&] { return f.service.open_streams() == HealthService::kMaxStreams - 1; }, seconds(2)));
  grpc::ClientContext later;
  auto admitted = f.watch(later);
  EXPECT_EQ(next(*admitted).size(), 1u);
}

TEST(dra_HealthService, AStreamThatDoesNotReadNeverBlocksUpdate) {
  Fixture f;
  f.service.update({card(0)});
  grpc::ClientContext context;
  auto stream = f.watch(context);  // never read: its flow-control window fills
  ASSERT_TRUE(xpu::test::wait_until([&] { return f.service.open_streams() == 1; }, seconds(5)));
  // Far more bytes than a window holds, were each update a message of its own.
  auto updates = std::async(std::launch::async, [&] {
    for (int i = 0; i < 20000; ++i) {
      f.clock = 2000 + i;
      f.service.update({card(0).healthy(i % 2 == 0), card(1).healthy(i % 3 == 0), card(2)});
    }
  });
  EXPECT_EQ(updates.wait_for(seconds(10)), std::future_status::ready);
  context.TryCancel();  // unblocks a stuck Write, should the assertion above have failed
}

TEST(dra_HealthServiceV1, FirstMessageListsEveryCardAndWhyOneIsUnhealthy) {
  Fixture f;
  f.service.update({card(0).health_reason("ignored while healthy"), card(1).unhealthy("link down"),
                    card(2).virtual_function()});
  grpc::ClientContext context;
  auto stream = f.watch_v1(context);
  EXPECT_EQ(next(*stream), (std::vector<std::string>{"node-a/xpu-0 HEALTHY@1000",
                                                     "node-a/xpu-1 UNHEALTHY@1000: link down",
                                                     "node-a/xpu-2 HEALTHY@1000"}));
}

TEST(dra_HealthServiceV1, AHealthChangeIsSentWithItsReason) {
  Fixture f;
  f.service.update({card(0), card(1)});
  grpc::ClientContext context;
  auto stream = f.watch_v1(context);
  ASSERT_EQ(next(*stream),
            (std::vector<std::string>{"node-a/xpu-0 HEALTHY@1000", "node-a/xpu-1 HEALTHY@1000"}));
  f.clock = 1060;
  f.service.update({card(0).unhealthy("temperature 105 C"), card(1)});
  EXPECT_EQ(next(*stream),
            (std::vector<std::string>{"node-a/xpu-0 UNHEALTHY@1060: temperature 105 C",
                                      "node-a/xpu-1 HEALTHY@1000"}));
  // A new reason is news to v1 even though the health (and so its time) stays.
  f.clock = 1090;
  f.service.update({card(0).unhealthy("temperature 110 C"), card(1)});
  EXPECT_EQ(next(*stream),
            (std::vector<std::string>{"node-a/xpu-0 UNHEALTHY@1060: temperature 110 C",
                                      "node-a/xpu-1 HEALTHY@1000"}));
}

TEST(dra_HealthServiceV1, ALongReasonIsCutAtACharacterBoundary) {
  // 1023 ASCII bytes, then a 3-byte character across the 1024-byte limit.
  const std::string reason = std::string(1023, 'x') + "\xE2\x82\xAC" + "tail";
  Fixture f;
  f.service.update({card(0).unhealthy(reason)});
  grpc::ClientContext context;
  auto stream = f.watch_v1(context);
  healthv1pb::NodeWatchResourcesResponse response;
  ASSERT_TRUE(stream->Read(&response));  // the client's parse checks the UTF-8
  ASSERT_EQ(response.devices_size(), 1);
  EXPECT_EQ(response.devices(0).message(), std::string(1023, 'x'));
}

TEST(dra_HealthServiceV1, TruncateUtf8KeepsWholeCharacters) {
  EXPECT_EQ(truncate_utf8("short", 1024), "short");
  EXPECT_EQ(truncate_utf8("abcdef", 3), "abc");
  EXPECT_EQ(truncate_utf8("a\xC3\xA9", 2), "a");          // é would be split
  EXPECT_EQ(truncate_utf8("a\xC3\xA9", 3), "a\xC3\xA9");  // fits whole
  EXPECT_EQ(truncate_utf8("\xF0\x9F\x98\x80z", 3), "");   // a 4-byte emoji cut at any point
}

TEST(dra_HealthServiceV1, BothVersionsOpenAtOnceSeeTheSameChange) {
  Fixture f;
  f.service.update({card(0)});
  grpc::ClientContext alpha_context;
  grpc::ClientContext v1_context;
  auto alpha = f.watch(alpha_context);
  auto v1 = f.watch_v1(v1_context);
  ASSERT_EQ(next(*alpha), (std::vector<std::string>{"node-a/xpu-0 HEALTHY@1000"}));
  ASSERT_EQ(next(*v1), (std::vector<std::string>{"node-a/xpu-0 HEALTHY@1000"}));
  ASSERT_TRUE(xpu::test::wait_until([&] { return f.service.open_streams() == 2; }, seconds(5)));
  f.clock = 1010;
  f.service.update({card(0).unhealthy("xpud lost the card")});
  EXPECT_EQ(next(*alpha), (std::vector<std::string>{"node-a/xpu-0 UNHEALTHY@1010"}));
  EXPECT_EQ(next(*v1),
            (std::vector<std::string>{"node-a/xpu-0 UNHEALTHY@1010: xpud lost the card"}));

  // close_all ends both.
  f.service.close_all();
  EXPECT_EQ(next(*alpha), std::vector<std::string>{"<stream ended>"});
  EXPECT_EQ(next(*v1), std::vector<std::string>{"<stream ended>"});
  EXPECT_TRUE(alpha->Finish().ok());
  EXPECT_TRUE(v1->Finish().ok());
}

TEST(dra_HealthServiceV1, TheStreamLimitCountsBothVersions) {
  Fixture f;
  f.service.update({card(0)});
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<Stream>> alpha_streams;
  std::vector<std::unique_ptr<StreamV1>> v1_streams;
  for (std::size_t i = 0; i < HealthService::kMaxStreams; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    // Alternate versions; each stream's first message means the server counts it.
    if (i % 2 == 0) {
      alpha_streams.push_back(f.watch(*contexts.back()));
      ASSERT_EQ(next(*alpha_streams.back()).size(), 1u);
    } else {
      v1_streams.push_back(f.watch_v1(*contexts.back()));
      ASSERT_EQ(next(*v1_streams.back()).size(), 1u);
    }
  }
  grpc::ClientContext v1_context;
  auto refused_v1 = f.watch_v1(v1_context);
  EXPECT_EQ(next(*refused_v1), std::vector<std::string>{"<stream ended>"});
  EXPECT_EQ(refused_v1->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  grpc::ClientContext alpha_context;
  auto refused_alpha = f.watch(alpha_context);
  EXPECT_EQ(next(*refused_alpha), std::vector<std::string>{"<stream ended>"});
  EXPECT_EQ(refused_alpha->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);

  // A v1alpha1 stream's slot, once free, serves a v1 stream.
  contexts.front()->TryCancel();
  ASSERT_TRUE(xpu::test::wait_until(
      [&] { return f.service.open_streams() == HealthService::kMaxStreams - 1; }, seconds(2)));
  grpc::ClientContext later;
  auto admitted = f.watch_v1(later);
  EXPECT_EQ(next(*admitted).size(), 1u);
}

TEST(dra_HealthServiceV1, SharesPackageV1WithPodResourcesWithoutAClash) {
  // Both files register in one descriptor pool (a clash aborts at start-up); touching both
  // messages makes the linker keep both here.
  EXPECT_EQ(healthv1pb::DeviceHealth::descriptor()->full_name(), "v1.DeviceHealth");
  EXPECT_EQ(::v1::ListPodResourcesRequest::descriptor()->full_name(), "v1.ListPodResourcesRequest");
  EXPECT_STREQ(healthv1pb::DRAResourceHealth::service_full_name(), "v1.DRAResourceHealth");
}

}  // namespace
}  // namespace shim::dra
