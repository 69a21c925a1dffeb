#include "k8s-shim/dra/kubelet/claim_cdi_spec.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/names.h"
#include "k8s-shim/dra/kubelet/claim_cdi_names.h"
#include "tests/support/child_process.h"

namespace shim::dra {
namespace {

using ::testing::ElementsAre;

constexpr const char* kUid = "3f1c2a9e-1111-4222-8333-444455556666";

PreparedClaim claim() {
  PreparedClaim c{kUid, "team", "gpu-claim", {}};
  // xpu-2 listed before xpu-0: the environment still comes out ascending by index.
  c.devices.push_back({{"train", "infer"}, "node-a", "xpu-2", 2, "UUID-2", {}});
  c.devices.push_back({{"train"}, "node-a", "xpu-0", 0, "UUID-0", {}});
  return c;
}

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(dra_ClaimCdiSpec, NamesFollowTheCdiRule) {
  EXPECT_EQ(claim_cdi_spec_file_name(kUid), std::string("kunlunxin-claim-") + kUid + ".json");
  EXPECT_EQ(claim_cdi_qualified_name(kUid, "train"),
            std::string("kunlunxin.com/claim=") + kUid + "-train");
  EXPECT_TRUE(xpu::names::cdi::is_device_name(claim_cdi_device_name(kUid, "main/sub")));
  EXPECT_FALSE(is_claim_uid("../x"));
  EXPECT_FALSE(is_claim_uid(""));
  EXPECT_TRUE(is_claim_uid(kUid));
}

TEST(dra_ClaimCdiSpec, OneDevicePerRequestWithTheEnvironmentOfAllItsCards) {
  auto spec = nlohmann::json::parse(claim_cdi_spec_json(claim()));
  EXPECT_EQ(spec["cdiVersion"], "0.5.0");
  EXPECT_EQ(spec["kind"], "kunlunxin.com/claim");
  ASSERT_EQ(spec["devices"].size(), 2u);
  // Sorted by request name.
  EXPECT_EQ(spec["devices"][0]["name"], std::string(kUid) + "-infer");
  EXPECT_THAT(
      spec["devices"][0]["containerEdits"]["env"].get<std::vector<std::string>>(),
      ElementsAre("XPU_VISIBLE_DEVICES=2", "CXPU_VISIBLE_DEVICES=2", "KUNLUNXIN_XPU_UUIDS=UUID-2"));
  EXPECT_EQ(spec["devices"][1]["name"], std::string(kUid) + "-train");
  EXPECT_THAT(spec["devices"][1]["containerEdits"]["env"].get<std::vector<std::string>>(),
              ElementsAre("XPU_VISIBLE_DEVICES=0,2", "CXPU_VISIBLE_DEVICES=0,2",
                          "KUNLUNXIN_XPU_UUIDS=UUID-0,UUID-2"));
  // The cards' nodes come from xpud's spec, never from this one.
  for (const auto& device : spec["devices"])
    EXPECT_FALSE(device["containerEdits"].contains("deviceNodes"));
  EXPECT_FALSE(spec.contains("containerEdits"));
}

TEST(dra_ClaimCdiSpec, AVfioRequestsEntryNamesAllItsAddressesWhereKubeVirtReadsThem) {
  PreparedClaim c{kUid, "team", "vm-claim", {}};
  for (const char* address : {"0000:5e:00.1", "0000:5e:00.0"}) {
    PreparedDevice device;
    device.requests = {"vm"};
    device.pool = "node-a";
    device.device = std::string("vfio-") + address;
    device.cdi_ids = {std::string("kunlunxin.com/xpu_vfio=") + address};
    device.vfio_pci_bus_id = address;
    c.devices.push_back(device);
  }
  auto spec = nlohmann::json::parse(claim_cdi_spec_json(c));
  ASSERT_EQ(spec["devices"].size(), 1u);
  EXPECT_EQ(spec["devices"][0]["name"], std::string(kUid) + "-vm");
  // The device plugin's variable (xpu_vfio resource), all the request's functions, ascending; no
  // card variable (a container naming no card gets none). /dev/vfio/<group> comes from xpud's
  // VFIO spec, one entry per function.
  EXPECT_THAT(spec["devices"][0]["containerEdits"]["env"].get<std::vector<std::string>>(),
              ElementsAre("PCI_RESOURCE_KUNLUNXIN_COM_XPU_VFIO=0000:5e:00.0,0000:5e:00.1"));
  EXPECT_FALSE(spec["devices"][0]["containerEdits"].contains("deviceNodes"));
}

TEST(dra_ClaimCdiSpec, WrittenReadableAndRemoved) {
  xpu::test::TempDir dir;
  ClaimCdiSpecs specs(dir.path() / "cdi");  // created on first write
  ASSERT_TRUE(specs.write(claim()));
  const auto file = dir.path() / "cdi" / claim_cdi_spec_file_name(kUid);
  EXPECT_EQ(read(file), claim_cdi_spec_json(claim()));
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);  // runtimes read it, whoever they run as
  ASSERT_TRUE(specs.write(claim()));    // again: idempotent
  ASSERT_TRUE(specs.remove(kUid));
  EXPECT_FALSE(std::filesystem::exists(file));
  EXPECT_TRUE(specs.remove(kUid));  // already gone: fine
}

TEST(dra_ClaimCdiSpec, AUidThatIsNoFileNameIsRefused) {
  xpu::test::TempDir dir;
  ClaimCdiSpecs specs(dir.path());
  PreparedClaim bad = claim();
  bad.uid = "../escape";
  EXPECT_FALSE(specs.write(bad));
  EXPECT_FALSE(specs.remove("../escape"));
}

TEST(dra_ClaimCdiSpec, AShareBoundsTheContainersMemoryForTheVendorsRuntime) {
  constexpr std::int64_t kGiBytes = std::int64_t{1} << 30;
  PreparedClaim c{kUid, "team", "shares", {}};
  c.devices.push_back({{"one"}, "node-a", "xpu-3-shared", 3, "UUID-3", {}, "s1", 8 * kGiBytes});
  // Two cards, granted 6 and 4 GiB: the runtime divides evenly, so 2 x 4 GiB keeps both within.
  c.devices.push_back({{"two"}, "node-a", "xpu-0-shared", 0, "UUID-0", {}, "s2", 6 * kGiBytes});
  c.devices.push_back({{"two"}, "node-a", "xpu-1-shared", 1, "UUID-1", {}, "s3", 4 * kGiBytes});
  auto spec = nlohmann::json::parse(claim_cdi_spec_json(c));
  ASSERT_EQ(spec["devices"].size(), 2u);
  EXPECT_THAT(spec["devices"][0]["containerEdits"]["env"].get<std::vector<std::string>>(),
              ElementsAre("XPU_VISIBLE_DEVICES=3", "CXPU_VISIBLE_DEVICES=3",
                          "KUNLUNXIN_XPU_UUIDS=UUID-3", "CXPU_CONTAINER_MEMORY_LIMIT=8589934592"));
  EXPECT_THAT(
      spec["devices"][1]["containerEdits"]["env"].get<std::vector<std::string>>(),
      ElementsAre("XPU_VISIBLE_DEVICES=0,1", "CXPU_VISIBLE_DEVICES=0,1",
                  "KUNLUNXIN_XPU_UUIDS=UUID-0,UUID-1", "CXPU_CONTAINER_MEMORY_LIMIT=8589934592"));
  // Without xpud's hook command: the runtime alone enforces.
  for (const auto& device : spec["devices"])
    EXPECT_FALSE(device["containerEdits"].contains("hooks"));
}

TEST(dra_ClaimCdiSpec, WithXpudsHookEachSharedCardGetsItsInstanceMadeAndDestroyed) {
  constexpr std::int64_t kGiBytes = std::int64_t{1} << 30;
  PreparedClaim c{kUid, "team", "shares", {}};
  c.devices.push_back({{"two"}, "node-a", "xpu-1-shared", 1, "UUID-1", {}, "s1", 6 * kGiBytes});
  c.devices.push_back({{"two"}, "node-a", "xpu-0-shared", 0, "UUID-0", {}, "s2", 4 * kGiBytes});
  c.devices.push_back({{"whole"}, "node-a", "xpu-2", 2, "UUID-2", {}});
  c.instance_hook = {"/usr/bin/xpuctl", "--bus-address", "unix:path=/run/x"};
  c.instance_hook_names_share = true;
  auto spec = nlohmann::json::parse(claim_cdi_spec_json(c));
  ASSERT_EQ(spec["devices"].size(), 2u);
  const auto& hooks = spec["devices"][0]["containerEdits"]["hooks"];
  ASSERT_EQ(hooks.size(), 4u) << hooks.dump();
  auto args = [&](std::size_t i) { return hooks[i]["args"].get<std::vector<std::string>>(); };
  EXPECT_EQ(hooks[0]["hookName"], "createContainer");
  EXPECT_EQ(hooks[0]["path"], "/usr/bin/xpuctl");
  // Each names its share (claim UID and shareID) and its claim (namespace and name): xpud holds
  // one bound per share however many containers use the claim, and the instance's owner is of
  // the claim's namespace.
  const std::string claim_ref = "team/shares";
  EXPECT_THAT(args(0), ElementsAre("/usr/bin/xpuctl", "--bus-address", "unix:path=/run/x",
                                   "hook-create-instance", "1", "6442450944",
                                   std::string(kUid) + "/s1", claim_ref));
  EXPECT_EQ(hooks[1]["hookName"], "poststop");
  EXPECT_THAT(args(1), ElementsAre("/usr/bin/xpuctl", "--bus-address", "unix:path=/run/x",
                                   "hook-destroy-instance", "1"));
  EXPECT_THAT(args(2), ElementsAre("/usr/bin/xpuctl", "--bus-address", "unix:path=/run/x",
                                   "hook-create-instance", "0", "4294967296",
                                   std::string(kUid) + "/s2", claim_ref));
  EXPECT_THAT(args(3), ElementsAre("/usr/bin/xpuctl", "--bus-address", "unix:path=/run/x",
                                   "hook-destroy-instance", "0"));
  // A whole card has no instance to make.
  EXPECT_FALSE(spec["devices"][1]["containerEdits"].contains("hooks"));
}

// An xpud from before ShareInstancesSupported has an xpuctl that takes only INDEX BYTES: the
// share's arguments would fail every container, so the hook goes without them.
TEST(dra_ClaimCdiSpec, AnOlderXpudsHookNamesNoShare) {
  PreparedClaim c{kUid, "team", "shares", {}};
  c.devices.push_back(
      {{"one"}, "node-a", "xpu-1-shared", 1, "UUID-1", {}, "s1", std::int64_t{1} << 30});
  c.instance_hook = {"/usr/bin/xpuctl"};
  auto spec = nlohmann::json::parse(claim_cdi_spec_json(c));
  EXPECT_THAT(
      spec["devices"][0]["containerEdits"]["hooks"][0]["args"].get<std::vector<std::string>>(),
      ElementsAre("/usr/bin/xpuctl", "hook-create-instance", "1", "1073741824"));
}

}  // namespace
}  // namespace shim::dra
