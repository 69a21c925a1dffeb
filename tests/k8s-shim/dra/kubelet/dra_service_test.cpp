#include "k8s-shim/dra/kubelet/dra_service.h"

#include <atomic>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s-shim/cards/card_state.h"
#include "k8s-shim/dra/slices/slice_content.h"
#include "k8s-shim/grpc/unix_socket_server.h"
#include "tests/k8s-shim/dra/kubelet/kubelet_client.h"
#include "tests/support/card_builder.h"
#include "tests/support/child_process.h"

namespace shim::dra {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kNode = "node-a";
constexpr const char* kUidA = "aaaaaaaa-1111-4222-8333-444455556666";
constexpr const char* kUidB = "bbbbbbbb-1111-4222-8333-444455556666";

std::vector<xpu::DeviceInfo> cards() {
  std::vector<xpu::DeviceInfo> out;
  for (unsigned i = 0; i < 4; ++i)
    out.push_back(xpu::test::card(i).uuid("KL-UUID-" + std::to_string(i)).healthy(i != 3));
  return out;
}

// The API server as the tests want it: claim name -> claim, counting lookups.
struct FakeApiServer {
  std::map<std::string, AllocatedClaim> claims;
  std::atomic<int> lookups{0};

  ClaimLookup lookup() {
    return [this](std::string_view ns, std::string_view name) -> xpu::Result<AllocatedClaim> {
      ++lookups;
      auto it = claims.find(std::string(ns) + "/" + std::string(name));
      if (it == claims.end())
        return xpu::Error{"resourceclaims \"" + std::string(name) + "\" not found"};
      return it->second;
    };
  }
  void add(std::string ns, std::string name, std::string uid, std::vector<std::string> devices) {
    AllocatedClaim claim{name, ns, uid, true, {}};
    for (auto& d : devices) claim.results.push_back({"xpu", "xpu.kunlunxin.com", kNode, d});
    claims[ns + "/" + name] = claim;
  }
};

// One "run" of the plugin: the service over the checkpoint and CDI directory, on a socket.
struct Plugin {
  std::unique_ptr<ClaimState> state;
  std::unique_ptr<DraService> service;
  std::unique_ptr<UnixSocketServer> server;
  std::shared_ptr<grpc::Channel> channel;

  Plugin(const std::filesystem::path& dir, ClaimLookup lookup, CardSource source = cards) {
    state = std::make_unique<ClaimState>(std::move(lookup), std::move(source), kNode,
                                         PreparedClaims::load(dir / "plugin" / "checkpoint.json"),
                                         ClaimCdiSpecs(dir / "cdi"));
    service = std::make_unique<DraService>(*state);
    auto started = UnixSocketServer::start(dir / "dra.sock", *service);
    if (!started) throw std::runtime_error(started.error());
    server = std::move(*started);
    channel = test::kubelet_channel(dir / "dra.sock");
  }
  ~Plugin() { server.reset(); }  // stop serving before the service goes

  drapb::NodePrepareResourcesResponse prepare(std::vector<std::array<std::string, 3>> claims) {
    drapb::NodePrepareResourcesRequest request;
    for (auto& [ns, uid, name] : claims) {
      auto* c = request.add_claims();
      c->set_namespace_(ns);
      c->set_uid(uid);
      c->set_name(name);
    }
    drapb::NodePrepareResourcesResponse response;
    grpc::Status status = test::call(channel, test::kPreparePath, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }
  drapb::NodeUnprepareResourcesResponse unprepare(std::vector<std::array<std::string, 3>> claims) {
    drapb::NodeUnprepareResourcesRequest request;
    for (auto& [ns, uid, name] : claims) {
      auto* c = request.add_claims();
      c->set_namespace_(ns);
      c->set_uid(uid);
      c->set_name(name);
    }
    drapb::NodeUnprepareResourcesResponse response;
    grpc::Status status = test::call(channel, test::kUnpreparePath, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }
};

std::vector<std::string> cdi_ids(const drapb::Device& device) {
  return {device.cdi_device_ids().begin(), device.cdi_device_ids().end()};
}

TEST(dra_DraService, PrepareAnswersTheCardsAndWritesSpecAndCheckpoint) {
  xpu::test::TempDir dir;
  FakeApiServer api;
  api.add("team", "claim-a", kUidA, {"xpu-0", "xpu-1"});
  Plugin plugin(dir.path(), api.lookup());
  auto response = plugin.prepare({{"team", kUidA, "claim-a"}});
  ASSERT_EQ(response.claims().count(kUidA), 1u);
  const auto& claim = response.claims().at(kUidA);
  EXPECT_EQ(claim.error(), "");
  ASSERT_EQ(claim.devices_size(), 2);
  EXPECT_THAT(claim.devices(0).request_names(), ElementsAre("xpu"));
  EXPECT_EQ(claim.devices(0).pool_name(), kNode);
  EXPECT_EQ(claim.devices(0).device_name(), "xpu-0");
  EXPECT_THAT(cdi_ids(claim.devices(0)), ElementsAre("kunlunxin.com/xpu=KL-UUID-0"));
  EXPECT_THAT(cdi_ids(claim.devices(1)),
              ElementsAre("kunlunxin.com/xpu=KL-UUID-1",
                          std::string("kunlunxin.com/claim=") + kUidA + "-xpu"));
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "cdi" /
                                      (std::string("kunlunxin-claim-") + kUidA + ".json")));
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "plugin" / "checkpoint.json"));
  EXPECT_EQ(plugin.state->prepared_count(), 1u);
}

TEST(dra_DraService, AfterARestartPrepareAnswersTheSameWithoutLookingUpAndUnprepareCleansUp) {
  xpu::test::TempDir dir;
  FakeApiServer api;
  api.add("team", "claim-a", kUidA, {"xpu-2"});
  drapb::NodePrepareResourcesResponse first;
  {
    Plugin plugin(dir.path(), api.lookup());
    first = plugin.prepare({{"team", kUidA, "claim-a"}});
    EXPECT_EQ(api.lookups, 1);
  }
  // A reboot empties /var/run/cdi; the checkpoint under /var/lib stays.
  std::filesystem::remove_all(dir.path() / "cdi");
  Plugin restarted(dir.path(),
                   [](std::string_view, std::string_view) -> xpu::Result<AllocatedClaim> {
                     ADD_FAILURE() << "a recorded claim must not be looked up again";
                     return xpu::Error{"no lookup expected"};
                   });
  EXPECT_EQ(restarted.state->prepared_count(), 1u);
  auto again = restarted.prepare({{"team", kUidA, "claim-a"}});
  EXPECT_EQ(again.SerializeAsString(), first.SerializeAsString());
  const auto spec = dir.path() / "cdi" / (std::string("kunlunxin-claim-") + kUidA + ".json");
  EXPECT_TRUE(std::filesystem::exists(spec));

  auto unprepared = restarted.unprepare({{"team", kUidA, "claim-a"}});
  ASSERT_EQ(unprepared.claims().count(kUidA), 1u);
  EXPECT_EQ(unprepared.claims().at(kUidA).error(), "");
  EXPECT_FALSE(std::filesystem::exists(spec));
  EXPECT_EQ(restarted.state->prepared_count(), 0u);
  EXPECT_TRUE(PreparedClaims::load(dir.path() / "plugin" / "checkpoint.json").claims().empty());
  // Unprepare again, or of a claim never seen: success.
  auto unknown = restarted.unprepare({{"team", kUidA, "claim-a"}, {"team", kUidB, "claim-b"}});
  EXPECT_EQ(unknown.claims().at(kUidA).error(), "");
  EXPECT_EQ(unknown.claims().at(kUidB).error(), "");
}

TEST(dra_DraService, OneClaimsErrorLeavesTheOthersPrepared) {
  xpu::test::TempDir dir;
  FakeApiServer api;
  api.add("team", "good", kUidA, {"xpu-0"});
  api.add("team", "sick", kUidB, {"xpu-3"});  // card 3 is unhealthy
  Plugin plugin(dir.path(), api.lookup());
  auto response = plugin.prepare({{"team", kUidA, "good"},
                                  {"team", kUidB, "sick"},
                                  {"team", "cccccccc-1111-4222-8333-444455556666", "missing"},
                                  {"team", "", "no-uid"}});
  ASSERT_EQ(response.claims_size(), 4);
  EXPECT_EQ(response.claims().at(kUidA).error(), "");
  EXPECT_EQ(response.claims().at(kUidA).devices_size(), 1);
  EXPECT_THAT(response.claims().at(kUidB).error(), HasSubstr("team/sick"));
  EXPECT_THAT(response.claims().at(kUidB).error(), HasSubstr("unhealthy"));
  EXPECT_EQ(response.claims().at(kUidB).devices_size(), 0);
  EXPECT_THAT(response.claims().at("cccccccc-1111-4222-8333-444455556666").error(),
              HasSubstr("not found"));
  EXPECT_THAT(response.claims().at("").error(), HasSubstr("empty"));
  EXPECT_EQ(plugin.state->prepared_count(), 1u);
}

// Found by fuzz/dra_prepare_fuzzer: the second copy of a UID appended its devices to the first
// copy's entry (or added devices to an error), and which copy failed decided the answer.
TEST(dra_DraService, AUidSentTwiceInOneCallIsRefusedAndOthersArePrepared) {
  xpu::test::TempDir dir;
  FakeApiServer api;
  api.add("team", "claim-a", kUidA, {"xpu-0"});
  api.add("team", "claim-b", kUidB, {"xpu-1"});
  Plugin plugin(dir.path(), api.lookup());
  auto response = plugin.prepare(
      {{"team", kUidA, "claim-a"}, {"team", kUidB, "claim-b"}, {"team", kUidA, "claim-a"}});
  ASSERT_EQ(response.claims_size(), 2);
  const auto& twice = response.claims().at(kUidA);
  EXPECT_THAT(twice.error(), HasSubstr("appears 2 times in one call"));
  EXPECT_EQ(twice.devices_size(), 0);
  EXPECT_EQ(response.claims().at(kUidB).error(), "");
  EXPECT_EQ(response.claims().at(kUidB).devices_size(), 1);
  EXPECT_EQ(plugin.state->prepared_count(), 1u);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "cdi" /
                                       (std::string("kunlunxin-claim-") + kUidA + ".json")));
}

TEST(dra_DraService, TooManyClaimsInOneCallAreRefused) {
  xpu::test::TempDir dir;
  FakeApiServer api;
  Plugin plugin(dir.path(), api.lookup());
  drapb::NodePrepareResourcesRequest request;
  for (int i = 0; i <= DraService::kMaxClaimsPerCall; ++i) {
    auto* c = request.add_claims();
    c->set_namespace_("team");
    c->set_uid("uid-" + std::to_string(i));
    c->set_name("claim-" + std::to_string(i));
  }
  drapb::NodePrepareResourcesResponse response;
  grpc::Status status = test::call(plugin.channel, test::kPreparePath, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(api.lookups, 0);
}

// The role's prepare reads the cards from the CardState the slice is made from: once xpud has
// been gone past the grace period, a card the slice calls unhealthy is not prepared either (it
// was, while prepare read xpud's last raw view).
TEST(dra_DraService, PrepareRefusesCardsTheSliceCallsUnhealthyOnceXpudIsGonePastTheGracePeriod) {
  using namespace std::chrono_literals;
  xpu::test::TempDir dir;
  FakeApiServer api;
  api.add("team", "claim-a", kUidA, {"xpu-0"});
  api.add("team", "claim-b", kUidB, {"xpu-1"});
  const auto gone = CardState::Clock::time_point{} + 1h;
  CardState state(10s, gone);
  state.update(xpu::test::absent(cards()), gone);
  // Read by the service's gRPC thread, set by this one.
  std::atomic<CardState::Clock::time_point> now{gone + 5s};
  Plugin plugin(dir.path(), api.lookup(), [&] { return state.cards_at(now.load()); });
  // Within the grace period a short restart of xpud changes nothing.
  auto within = plugin.prepare({{"team", kUidA, "claim-a"}});
  EXPECT_EQ(within.claims().at(kUidA).error(), "");
  now.store(gone + 11s);
  // The slice made at that moment says the claim's card is unhealthy.
  const auto slice = desired_slice(*state.at(now.load()).view, kNode, 0);
  ASSERT_EQ(slice.devices.size(), 4u);
  EXPECT_EQ(slice.devices[1].name, "xpu-1");
  EXPECT_EQ(slice.devices[1].attributes.at(std::string(slice_attribute::kHealthy)),
            AttributeValue(false));
  auto past = plugin.prepare({{"team", kUidB, "claim-b"}});
  EXPECT_THAT(past.claims().at(kUidB).error(),
              HasSubstr("xpud has been unreachable for longer than the grace period"));
  EXPECT_EQ(past.claims().at(kUidB).devices_size(), 0);
}

TEST(dra_DraService, TheServiceNameIsTheKubelets) {
  EXPECT_STREQ(drapb::DRAPlugin::service_full_name(), "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin");
}

}  // namespace
}  // namespace shim::dra
