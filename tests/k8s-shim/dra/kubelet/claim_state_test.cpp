// The device metadata files over a claim's life in ClaimState: written at prepare with the
// attributes the role gives, mounted by the claim's CDI spec, removed at unprepare, written again
// from the checkpoint after a restart, refused for hostile names.
#include "k8s-shim/dra/kubelet/claim_state.h"

#include <tuple>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/card_builder.h"
#include "tests/support/child_process.h"

namespace shim::dra {
namespace {

using ::testing::HasSubstr;

// The UIDs of a claim and of the claim made again under its name.
const std::string kUidA = "aaaaaaaa-1111-4222-8333-444455556666";
const std::string kUidB = "bbbbbbbb-1111-4222-8333-444455556666";

// The first object of a metadata stream.
nlohmann::json first_object(const std::string& stream) {
  return nlohmann::json::parse(stream.substr(0, stream.find("\n}\n") + 2));
}

struct Node {
  xpu::test::TempDir dir;
  std::map<std::string, AllocatedClaim> api;  // "ns/name" -> claim
  int attribute_calls = 0;

  std::filesystem::path metadata_dir() const {
    return dir.path() / "plugin" / "dra-device-metadata";
  }
  std::filesystem::path spec(const std::string& uid) const {
    return dir.path() / "cdi" / ("kunlunxin-claim-" + uid + ".json");
  }

  void add(const std::string& ns, const std::string& name, const std::string& uid,
           std::vector<std::string> devices, std::string pod_claim_name = {}) {
    AllocatedClaim claim{name, ns, uid, true, {}, std::move(pod_claim_name)};
    for (auto& d : devices) claim.results.push_back({"xpus", "xpu.kunlunxin.com", "node-a", d});
    api[ns + "/" + name] = claim;
  }

  std::unique_ptr<ClaimState> start(bool metadata = true) {
    std::optional<DeviceMetadataConfig> config;
    if (metadata)
      config = DeviceMetadataConfig{
          .files = DeviceMetadataFiles(metadata_dir()),
          .attributes = [this](const PreparedDevice& device) {
            ++attribute_calls;
            return DeviceAttributes{{"index", std::int64_t{device.index}}, {"uuid", device.uuid}};
          }};
    return std::make_unique<ClaimState>(
        [this](std::string_view ns, std::string_view name) -> xpu::Result<AllocatedClaim> {
          auto it = api.find(std::string(ns) + "/" + std::string(name));
          if (it == api.end()) return xpu::Error{"not found"};
          return it->second;
        },
        [] {
          std::vector<xpu::DeviceInfo> cards;
          for (unsigned i : {0, 1, 2, 3})
            cards.push_back(xpu::test::card(i).uuid("KL-UUID-" + std::to_string(i)));
          return cards;
        },
        "node-a", PreparedClaims::load(dir.path() / "plugin" / "checkpoint.json"),
        ClaimCdiSpecs(dir.path() / "cdi"), std::function<void()>{}, HookSource{},
        std::move(config));
  }
};

TEST(dra_ClaimStateMetadata, PrepareWritesTheFileTheSpecMountsAndUnprepareRemovesIt) {
  Node node;
  node.add("team", "claim-a", kUidA, {"xpu-2", "xpu-0"});
  auto state = node.start();
  auto prepared = state->prepare({"team", kUidA, "claim-a"});
  ASSERT_TRUE(prepared) << prepared.error();

  const auto file = node.metadata_dir() / "team_claim-a" / "xpus" / "metadata.json";
  ASSERT_TRUE(std::filesystem::exists(file));
  const auto object = first_object(xpu::test::read_file(file));
  EXPECT_EQ(object["apiVersion"], "metadata.resource.k8s.io/v1beta1");
  EXPECT_EQ(object["metadata"]["uid"], kUidA);
  const auto& devices = object["requests"][0]["devices"];
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0]["name"], "xpu-2");
  EXPECT_EQ(devices[0]["attributes"]["uuid"]["string"], "KL-UUID-2");
  EXPECT_EQ(devices[1]["attributes"]["index"]["int"], 0);

  const auto spec = nlohmann::json::parse(xpu::test::read_file(node.spec(kUidA)));
  const auto& mount = spec["devices"][0]["containerEdits"]["mounts"][0];
  EXPECT_EQ(mount["hostPath"], file.string());
  EXPECT_EQ(mount["containerPath"],
            "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/claim-a/xpus/"
            "xpu.kunlunxin.com-metadata.json");

  ASSERT_TRUE(state->unprepare({"team", kUidA, "claim-a"}));
  EXPECT_FALSE(std::filesystem::exists(node.metadata_dir() / "team_claim-a"));
  EXPECT_FALSE(std::filesystem::exists(node.spec(kUidA)));
}

TEST(dra_ClaimStateMetadata, ARestartWritesTheSameFileFromTheCheckpointWithoutAskingAgain) {
  Node node;
  node.add("team", "claim-a", kUidA, {"xpu-1"}, "xpus");
  std::string before;
  {
    auto state = node.start();
    ASSERT_TRUE(state->prepare({"team", kUidA, "claim-a"}));
    before = xpu::test::read_file(node.metadata_dir() / "team_claim-a" / "xpus" / "metadata.json");
  }
  EXPECT_EQ(node.attribute_calls, 1);
  // A reboot empties /var/run/cdi; take the metadata file too, to see it written again.
  std::filesystem::remove_all(node.dir.path() / "cdi");
  std::filesystem::remove_all(node.metadata_dir());
  node.api.clear();  // the API server is not asked
  auto restarted = node.start();
  auto again = restarted->prepare({"team", kUidA, "claim-a"});
  ASSERT_TRUE(again) << again.error();
  EXPECT_EQ(xpu::test::read_file(node.metadata_dir() / "team_claim-a" / "xpus" / "metadata.json"),
            before);
  EXPECT_EQ(node.attribute_calls, 1);  // the checkpoint's attributes, not today's
  EXPECT_EQ(first_object(before)["podClaimName"], "xpus");
  const auto spec = nlohmann::json::parse(xpu::test::read_file(node.spec(kUidA)));
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["mounts"][0]["containerPath"],
            "/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/xpus/xpus/"
            "xpu.kunlunxin.com-metadata.json");
}

TEST(dra_ClaimStateMetadata, TheOldClaimsUnprepareLeavesTheFilesOfItsSuccessorUnderTheSameName) {
  Node node;
  auto state = node.start();
  node.add("team", "claim-a", kUidA, {"xpu-0"});
  ASSERT_TRUE(state->prepare({"team", kUidA, "claim-a"}));
  // Deleted and made again under its name (a force-deleted pod's claim), prepared before the old
  // one's unprepare arrives.
  node.add("team", "claim-a", kUidB, {"xpu-3"});
  ASSERT_TRUE(state->prepare({"team", kUidB, "claim-a"}));
  ASSERT_TRUE(state->unprepare({"team", kUidA, "claim-a"}));
  const auto file = node.metadata_dir() / "team_claim-a" / "xpus" / "metadata.json";
  ASSERT_TRUE(std::filesystem::exists(file));
  EXPECT_EQ(first_object(xpu::test::read_file(file))["metadata"]["uid"], kUidB);
  ASSERT_TRUE(state->unprepare({"team", kUidB, "claim-a"}));
  EXPECT_FALSE(std::filesystem::exists(node.metadata_dir() / "team_claim-a"));
}

// As the library's helper does: a claim whose files cannot be written is prepared without them.
TEST(dra_ClaimStateMetadata, AClaimWhoseFilesCannotBeWrittenRunsWithoutThem) {
  Node node;
  // A hostile annotation (the API server does not check annotations), and names the API server
  // takes whose directory name is too long for the file system (63 + 1 + 253 bytes).
  node.add("team", "claim-a", kUidA, {"xpu-0"}, "../../../../etc/cron.d");
  const std::string ns(63, 'n');
  const std::string name = std::string(63, 'c') + "." + std::string(63, 'c') + "." +
                           std::string(63, 'c') + "." + std::string(61, 'c');
  node.add(ns, name, kUidB, {"xpu-1"});
  auto state = node.start();
  for (const auto& [ns_name, uid, claim] :
       {std::tuple{std::string("team"), kUidA, std::string("claim-a")},
        std::tuple{ns, kUidB, name}}) {
    auto prepared = state->prepare({ns_name, uid, claim});
    ASSERT_TRUE(prepared) << prepared.error();
    const auto spec = nlohmann::json::parse(xpu::test::read_file(node.spec(uid)));
    EXPECT_FALSE(spec["devices"][0]["containerEdits"].contains("mounts")) << claim;
  }
  EXPECT_EQ(state->prepared_count(), 2u);
  auto none = [&node] {
    return !std::filesystem::exists(node.metadata_dir()) ||
           std::filesystem::is_empty(node.metadata_dir());
  };
  EXPECT_TRUE(none());
  ASSERT_TRUE(state->unprepare({"team", kUidA, "claim-a"}));
  ASSERT_TRUE(state->unprepare({ns, kUidB, name}));
  EXPECT_TRUE(none());
}

TEST(dra_ClaimStateMetadata, OffWritesNoFileAndNoMount) {
  Node node;
  node.add("team", "claim-a", kUidA, {"xpu-0"});
  auto state = node.start(/*metadata=*/false);
  ASSERT_TRUE(state->prepare({"team", kUidA, "claim-a"}));
  EXPECT_FALSE(std::filesystem::exists(node.metadata_dir()));
  const auto spec = nlohmann::json::parse(xpu::test::read_file(node.spec(kUidA)));
  EXPECT_FALSE(spec["devices"][0]["containerEdits"].contains("mounts"));
  EXPECT_EQ(node.attribute_calls, 0);
}

}  // namespace
}  // namespace shim::dra
