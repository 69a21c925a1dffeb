#include "k8s-shim/device_plugin/resource_plan.h"

#include <gtest/gtest.h>

#include "k8s-shim/cards/card_state.h"
#include "tests/support/card_builder.h"

namespace shim {
namespace {

using namespace std::chrono_literals;
using xpu::test::present;

// This file's cards have 32 GiB on NUMA node 0 unless a test says otherwise.
xpu::DeviceInfo card(unsigned index, std::string model = "R200", int numa = 0) {
  return xpu::test::card(index)
      .model(std::move(model))
      .numa_node(numa)
      .memory_total_bytes(32ull << 30);
}

// The process's view of `cards` once xpud has been gone from `at` for the grace period and more.
xpu::DeviceView after_the_grace_period(std::vector<xpu::DeviceInfo> cards) {
  const auto at = CardState::Clock::time_point{} + 1h;
  CardState state(10s, at);
  state.update(xpu::test::absent(std::move(cards)), at);
  return *state.at(at + 10s).view;
}

TEST(ResourcePlan, DefaultResourceCarriesEveryDevice) {
  auto a = card(0, "R200", 0);
  a.linked_devices = {1, 4, 0, 9};  // 0 is itself, 9 does not exist: both dropped
  auto b = card(1, "R200", 1);
  b.healthy = false;
  b.health_reason = "thermal trip";
  auto plan = plan_resources({}, present({b, a}), {});
  ASSERT_EQ(plan.resources.size(), 1u);
  const auto& r = plan.resources[0];
  EXPECT_EQ(r.resource_name, "kunlunxin.com/xpu");
  EXPECT_EQ(r.socket_name, "kunlunxin-xpu.sock");
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_EQ(r.devices[0].id, "uuid-0");  // ascending index whatever the input order
  EXPECT_EQ(r.devices[0].linked_ids, std::vector<std::string>{"uuid-1"});
  EXPECT_TRUE(r.devices[0].healthy);
  EXPECT_EQ(r.devices[0].unhealthy_reason, "");
  EXPECT_EQ(r.devices[1].id, "uuid-1");
  EXPECT_EQ(r.devices[1].numa_node, 1);
  EXPECT_FALSE(r.devices[1].healthy);
  EXPECT_EQ(r.devices[1].unhealthy_reason, "thermal trip");
  EXPECT_TRUE(plan.problems.empty());
}

TEST(ResourcePlan, ResourceExistsBeforeXpudAnswers) {
  auto plan = plan_resources({"baidu.com/xpu", false}, xpu::DeviceView{}, {});
  ASSERT_EQ(plan.resources.size(), 1u);
  EXPECT_EQ(plan.resources[0].resource_name, "baidu.com/xpu");
  EXPECT_EQ(plan.resources[0].socket_name, "kunlunxin-xpu.sock");
  EXPECT_TRUE(plan.resources[0].devices.empty());
}

TEST(ResourcePlan, UnknownNumaAndUnhealthyWithoutReason) {
  auto d = card(2, "R200", -7);
  d.healthy = false;
  auto plan = plan_resources({}, present({d}), {});
  ASSERT_EQ(plan.resources[0].devices.size(), 1u);
  EXPECT_EQ(plan.resources[0].devices[0].numa_node, -1);
  EXPECT_EQ(plan.resources[0].devices[0].unhealthy_reason, "reported Unhealthy by xpud");
}

// The grace period is CardState's: the plan takes the health of the view it is given.
TEST(ResourcePlan, PastTheGracePeriodEveryDeviceIsUnhealthyForThatReason) {
  auto plan = plan_resources({}, after_the_grace_period({card(0), card(1)}), {});
  ASSERT_EQ(plan.resources[0].devices.size(), 2u);
  for (const auto& d : plan.resources[0].devices) {
    EXPECT_FALSE(d.healthy);
    EXPECT_EQ(d.unhealthy_reason, "xpud has been unreachable for longer than the grace period");
  }
  // Within the grace period (the last known list as xpud left it) the last known health stands.
  auto within = plan_resources({}, xpu::test::absent({card(0), card(1)}), {});
  EXPECT_TRUE(within.resources[0].devices[0].healthy);
}

TEST(ResourcePlan, PerModelResourcesAndSockets) {
  auto plan = plan_resources({"kunlunxin.com/xpu", true},
                             present({card(0, "R200"), card(1, "R300"), card(2, "R200"),
                                      card(3, "RG800 PRO"), card(4, "")}),
                             {});
  ASSERT_EQ(plan.resources.size(), 4u);
  EXPECT_EQ(plan.resources[0].resource_name, "kunlunxin.com/R200");
  EXPECT_EQ(plan.resources[0].socket_name, "kunlunxin-xpu-r200.sock");
  ASSERT_EQ(plan.resources[0].devices.size(), 2u);
  EXPECT_EQ(plan.resources[0].devices[1].id, "uuid-2");
  EXPECT_EQ(plan.resources[1].resource_name, "kunlunxin.com/R300");
  EXPECT_EQ(plan.resources[1].socket_name, "kunlunxin-xpu-r300.sock");
  EXPECT_EQ(plan.resources[2].resource_name, "kunlunxin.com/RG800-PRO");
  EXPECT_EQ(plan.resources[2].socket_name, "kunlunxin-xpu-rg800-pro.sock");
  EXPECT_EQ(plan.resources[3].resource_name, "kunlunxin.com/unknown");
  EXPECT_EQ(plan.resources[3].socket_name, "kunlunxin-xpu-unknown.sock");
}

TEST(ResourcePlan, PerModelTakesTheDomainOfTheResourceName) {
  auto plan = plan_resources({"baidu.com/xpu", true}, present({card(0, "R200")}), {});
  ASSERT_EQ(plan.resources.size(), 1u);
  EXPECT_EQ(plan.resources[0].resource_name, "baidu.com/R200");
}

TEST(ResourcePlan, SocketCollisionsAreResolvedAndKnownSocketsKept) {
  auto plan =
      plan_resources({"kunlunxin.com/xpu", true}, present({card(0, "r200"), card(1, "R200")}), {});
  ASSERT_EQ(plan.resources.size(), 2u);
  // card 0 came first: it keeps the plain name.
  EXPECT_EQ(plan.resources[1].resource_name, "kunlunxin.com/r200");
  EXPECT_EQ(plan.resources[1].socket_name, "kunlunxin-xpu-r200.sock");
  EXPECT_EQ(plan.resources[0].resource_name, "kunlunxin.com/R200");
  EXPECT_NE(plan.resources[0].socket_name, "kunlunxin-xpu-r200.sock");
  EXPECT_TRUE(plan.resources[0].socket_name.starts_with("kunlunxin-xpu-r200-"));
  EXPECT_TRUE(plan.resources[0].socket_name.ends_with(".sock"));

  // An already served resource keeps its socket and stays (empty) when its cards are gone.
  std::map<std::string, std::string> known = {{"kunlunxin.com/R200", "kunlunxin-xpu-r200.sock"}};
  auto later = plan_resources({"kunlunxin.com/xpu", true}, present({card(0, "r200")}), known);
  ASSERT_EQ(later.resources.size(), 2u);
  EXPECT_EQ(later.resources[0].resource_name, "kunlunxin.com/R200");
  EXPECT_EQ(later.resources[0].socket_name, "kunlunxin-xpu-r200.sock");
  EXPECT_TRUE(later.resources[0].devices.empty());
  EXPECT_NE(later.resources[1].socket_name, "kunlunxin-xpu-r200.sock");
}

TEST(ResourcePlan, DevicesThatCannotBeAdvertisedAreReported) {
  auto no_uuid = card(0);
  no_uuid.uuid = "";
  auto long_uuid = card(1);
  long_uuid.uuid = std::string(64, 'a');
  auto comma = card(2);
  comma.uuid = "a,b";
  auto dup_uuid = card(3);
  dup_uuid.uuid = "uuid-4";
  auto good = card(4);
  auto dup_index = card(4);
  dup_index.uuid = "other";
  auto plan =
      plan_resources({}, present({no_uuid, long_uuid, comma, good, dup_uuid, dup_index}), {});
  ASSERT_EQ(plan.resources[0].devices.size(), 2u);
  EXPECT_EQ(plan.resources[0].devices[0].id, "uuid-4");  // dup_uuid (index 3) came first
  EXPECT_EQ(plan.resources[0].devices[0].index, 3u);
  EXPECT_EQ(plan.resources[0].devices[1].index, 4u);
  const std::vector<std::string> expected = {
      "device xpu0 is not advertised: the UUID is empty",
      "device xpu1 is not advertised: the UUID '" + std::string(64, 'a') +
          "' is longer than 63 characters",
      "device xpu2 is not advertised: the UUID 'a,b' contains a character other than letters, "
      "digits, "
      "'-', '_', '.' and ':'",
      "device xpu4 is not advertised: UUID 'uuid-4' belongs to another device too",
  };
  EXPECT_EQ(plan.problems, expected);
}

TEST(ResourcePlan, DuplicateIndexIsReported) {
  auto first = card(5);
  auto second = card(5);
  second.uuid = "another";
  auto plan = plan_resources({}, present({first, second}), {});
  ASSERT_EQ(plan.resources[0].devices.size(), 1u);
  EXPECT_EQ(plan.resources[0].devices[0].id, "uuid-5");
  EXPECT_EQ(plan.problems,
            std::vector<std::string>{"device xpu5 is not advertised: its index is reported twice"});
}

TEST(ResourcePlan, ModelSocketNames) {
  EXPECT_EQ(socket_name_for_model("R200-8F"), "kunlunxin-xpu-r200-8f.sock");
  EXPECT_EQ(socket_name_for_model("P800/x"), "kunlunxin-xpu-p800-x.sock");
  EXPECT_EQ(socket_name_for_model("  "), "kunlunxin-xpu-unknown.sock");
}

xpu::DeviceInfo virtual_function(unsigned index, std::string model = "R200") {
  auto d = card(index, std::move(model));
  d.uuid = "vf-uuid-" + std::to_string(index);
  d.is_virtual_function = true;
  d.device_nodes = {"/dev/xpu" + std::to_string(index), "/dev/xpuctrl"};
  return d;
}

const ResourceState* find_resource(const ResourcePlan& plan, std::string_view name) {
  for (const auto& r : plan.resources)
    if (r.resource_name == name) return &r;
  return nullptr;
}

TEST(ResourcePlan, VirtualFunctionsAreLeftOutWithoutSriov) {
  auto plan = plan_resources({}, present({card(0), virtual_function(1), virtual_function(2)}), {});
  ASSERT_EQ(plan.resources.size(), 1u);
  ASSERT_EQ(plan.resources[0].devices.size(), 1u);
  EXPECT_EQ(plan.resources[0].devices[0].id, "uuid-0");
  EXPECT_TRUE(plan.problems.empty());
  EXPECT_EQ(
      plan.notices,
      std::vector<std::string>{
          "SR-IOV virtual functions xpu1, xpu2 are not advertised: --enable-sriov is not set"});
}

TEST(ResourcePlan, SriovAdvertisesVirtualFunctionsOnTheirOwnResource) {
  ResourceConfig config;
  config.enable_sriov = true;
  auto plan =
      plan_resources(config, present({virtual_function(2), card(0), virtual_function(1)}), {});
  ASSERT_EQ(plan.resources.size(), 2u);
  const auto* cards = find_resource(plan, "kunlunxin.com/xpu");
  const auto* vfs = find_resource(plan, "kunlunxin.com/vxpu");
  ASSERT_NE(cards, nullptr);
  ASSERT_NE(vfs, nullptr);
  EXPECT_EQ(cards->socket_name, "kunlunxin-xpu.sock");
  ASSERT_EQ(cards->devices.size(), 1u);
  EXPECT_FALSE(cards->devices[0].virtual_function);
  EXPECT_EQ(vfs->socket_name, "kunlunxin-vxpu.sock");
  ASSERT_EQ(vfs->devices.size(), 2u);
  EXPECT_EQ(vfs->devices[0].id, "vf-uuid-1");
  EXPECT_EQ(vfs->devices[1].index, 2u);
  EXPECT_TRUE(vfs->devices[1].virtual_function);
  EXPECT_EQ(vfs->devices[1].device_nodes, (std::vector<std::string>{"/dev/xpu2", "/dev/xpuctrl"}));
  EXPECT_TRUE(plan.problems.empty());
  EXPECT_TRUE(plan.notices.empty());

  // The resource exists (empty) before xpud answers, under --resource-name's domain.
  config.resource_name = "example.com/accel";
  auto empty = plan_resources(config, xpu::DeviceView{}, {});
  ASSERT_EQ(empty.resources.size(), 2u);
  EXPECT_EQ(empty.resources[0].resource_name, "example.com/accel");
  EXPECT_EQ(empty.resources[1].resource_name, "example.com/vxpu");
}

TEST(ResourcePlan, SriovPerModelNamesAndBadDeviceNodes) {
  ResourceConfig config;
  config.per_model = true;
  config.enable_sriov = true;
  auto no_nodes = virtual_function(3);
  no_nodes.device_nodes.clear();
  auto escaping = virtual_function(4);
  escaping.device_nodes = {"/dev/../etc/shadow"};
  auto plan =
      plan_resources(config, present({card(0), virtual_function(1), no_nodes, escaping}), {});
  ASSERT_EQ(plan.resources.size(), 2u);
  EXPECT_EQ(plan.resources[0].resource_name, "kunlunxin.com/R200");
  EXPECT_EQ(plan.resources[0].socket_name, "kunlunxin-xpu-r200.sock");
  EXPECT_EQ(plan.resources[1].resource_name, "kunlunxin.com/R200-vxpu");
  EXPECT_EQ(plan.resources[1].socket_name, "kunlunxin-vxpu-r200.sock");
  ASSERT_EQ(plan.resources[1].devices.size(), 1u);
  EXPECT_EQ(plan.problems,
            (std::vector<std::string>{
                "device xpu3 (SR-IOV virtual function) is not advertised: xpud lists no device "
                "node for it",
                "device xpu4 (SR-IOV virtual function) is not advertised: device node "
                "'/dev/../etc/shadow' has an empty, '.' or '..' component"}));
}

TEST(ResourcePlan, DeviceNodeValidation) {
  EXPECT_TRUE(validate_device_node("/dev/xpu0").ok());
  EXPECT_TRUE(validate_device_node("/dev/dri/card1").ok());
  EXPECT_FALSE(validate_device_node("/dev/").ok());
  EXPECT_FALSE(validate_device_node("/etc/passwd").ok());
  EXPECT_FALSE(validate_device_node("dev/xpu0").ok());
  EXPECT_FALSE(validate_device_node("/dev//xpu0").ok());
  EXPECT_FALSE(validate_device_node("/dev/xpu0/").ok());
  EXPECT_FALSE(validate_device_node(std::string("/dev/xpu\n0")).ok());
}

TEST(ResourcePlan, SriovCountOtherThanExpectedIsAWarning) {
  ResourceConfig config;
  config.enable_sriov = true;
  config.sriov_num_vfs = 2;
  // Two physical cards, three virtual functions: 2 x 2 = 4 expected.
  auto plan = plan_resources(
      config,
      present({card(0), card(1), virtual_function(2), virtual_function(3), virtual_function(4)}),
      {});
  ASSERT_EQ(plan.problems.size(), 1u);
  EXPECT_EQ(
      plan.problems[0],
      "xpud reports 3 SR-IOV virtual functions, but --sriov-num-vfs 2 x 2 physical cards expects "
      "4; "
      "change it on the host (xpuctl configure-vfs INDEX COUNT, while no process uses the card), "
      "or let the device plugin ask xpud for it (--reconfig-vxpu, allowed by [sriov] "
      "allow_cluster_reconfigure = true in xpud's configuration)");
  EXPECT_EQ(find_resource(plan, "kunlunxin.com/vxpu")->devices.size(), 3u);  // still advertised

  auto matching =
      plan_resources(config, present({card(0), virtual_function(1), virtual_function(2)}), {});
  EXPECT_TRUE(matching.problems.empty());
  config.sriov_num_vfs = 0;  // no expectation
  EXPECT_EQ(sriov_count_mismatch(config, present({card(0), virtual_function(1)})), "");
  config.sriov_num_vfs = 2;
  config.enable_sriov = false;  // the count only matters with SR-IOV
  EXPECT_EQ(sriov_count_mismatch(config, present({card(0)})), "");
}

TEST(ResourcePlan, SharedModeAdvertisesReplicasInsteadOfCards) {
  ResourceConfig config;
  config.share_replicas = 3;
  auto sick = card(1);
  sick.healthy = false;
  sick.health_reason = "ECC storm";
  auto plan = plan_resources(config, present({sick, card(0), virtual_function(2)}), {});
  ASSERT_EQ(plan.resources.size(), 1u);  // whole cards are not advertised at all
  const auto& r = plan.resources[0];
  EXPECT_EQ(r.resource_name, "kunlunxin.com/xpu-shared");
  EXPECT_EQ(r.socket_name, "kunlunxin-xpu-shared.sock");
  EXPECT_TRUE(r.shared);
  std::vector<std::string> ids;
  for (const auto& d : r.devices) ids.push_back(d.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"uuid-0::0", "uuid-0::1", "uuid-0::2", "uuid-1::0",
                                           "uuid-1::1", "uuid-1::2"}));
  EXPECT_EQ(r.devices[4].card_id, "uuid-1");
  EXPECT_EQ(r.devices[4].replica, 1u);
  EXPECT_FALSE(r.devices[4].healthy);  // health follows the card
  EXPECT_EQ(r.devices[4].unhealthy_reason, "ECC storm");
  EXPECT_TRUE(r.devices[0].healthy);
  EXPECT_EQ(plan.notices.size(), 1u);  // the virtual function, without --enable-sriov

  auto lost = plan_resources(config, after_the_grace_period({card(0)}), {});
  EXPECT_FALSE(lost.resources[0].devices[2].healthy);
}

TEST(ResourcePlan, SharedModeLeavesOutCardsWhoseReplicaIdsWouldBeTooLong) {
  ResourceConfig config;
  config.share_replicas = 10;  // suffix "::9": 3 characters
  auto fits = card(0);
  fits.uuid = std::string(60, 'a');
  auto too_long = card(1);
  too_long.uuid = std::string(61, 'b');
  auto plan = plan_resources(config, present({fits, too_long}), {});
  ASSERT_EQ(plan.resources[0].devices.size(), 10u);
  EXPECT_EQ(plan.resources[0].devices[9].id, std::string(60, 'a') + "::9");
  EXPECT_EQ(plan.problems, std::vector<std::string>{
                               "device xpu1 is not shared: UUID '" + std::string(61, 'b') +
                               "' plus the replica suffix would be longer than 63 characters"});
}

TEST(ResourcePlan, SharedModePerModelWithSriov) {
  ResourceConfig config;
  config.share_replicas = 2;
  config.per_model = true;
  config.enable_sriov = true;
  auto plan = plan_resources(config, present({card(0, "P800"), virtual_function(1, "P800")}), {});
  ASSERT_EQ(plan.resources.size(), 2u);
  EXPECT_EQ(plan.resources[0].resource_name, "kunlunxin.com/P800-shared");
  EXPECT_EQ(plan.resources[0].socket_name, "kunlunxin-xpu-shared-p800.sock");
  EXPECT_EQ(plan.resources[0].devices.size(), 2u);
  EXPECT_EQ(plan.resources[1].resource_name, "kunlunxin.com/P800-vxpu");
  ASSERT_EQ(plan.resources[1].devices.size(), 1u);  // virtual functions are never replicated
  EXPECT_EQ(plan.resources[1].devices[0].id, "vf-uuid-1");
}

std::vector<std::string> ids_of(const ResourceState& state) {
  std::vector<std::string> ids;
  for (const auto& d : state.devices) ids.push_back(d.id);
  return ids;
}

TEST(ResourcePlan, MemoryFormAdvertisesEachCardsMemoryInUnits) {
  ResourceConfig config;
  config.share_memory_unit_mib = 4096;  // 32 GiB cards: 8 units each
  auto sick = card(1);
  sick.healthy = false;
  sick.health_reason = "ECC storm";
  auto odd = card(2);
  odd.memory_total_bytes = (10ull << 30) - 1;  // 2 whole units of 4 GiB and a remainder
  auto plan = plan_resources(config, present({sick, card(0), odd, virtual_function(3)}), {});
  ASSERT_EQ(plan.resources.size(), 1u);  // whole cards are not advertised at all
  const auto& r = plan.resources[0];
  EXPECT_EQ(r.resource_name, "kunlunxin.com/vxpu-memory");
  EXPECT_EQ(r.socket_name, "kunlunxin-vxpu-memory.sock");
  EXPECT_TRUE(r.shared);
  EXPECT_EQ(r.memory_unit_bytes, 4ull << 30);
  ASSERT_EQ(r.devices.size(), 18u);
  EXPECT_EQ(r.devices[0].id, "uuid-0::m0");
  EXPECT_EQ(r.devices[7].id, "uuid-0::m7");
  EXPECT_EQ(r.devices[8].id, "uuid-1::m0");
  EXPECT_EQ(r.devices[10].id, "uuid-1::m2");
  EXPECT_EQ(r.devices[10].card_id, "uuid-1");
  EXPECT_EQ(r.devices[10].replica, 2u);
  EXPECT_FALSE(r.devices[10].healthy);  // health follows the card
  EXPECT_EQ(r.devices[10].unhealthy_reason, "ECC storm");
  EXPECT_TRUE(r.devices[0].healthy);
  EXPECT_EQ(r.devices[17].id, "uuid-2::m1");
  EXPECT_EQ(r.devices[0].numa_node, 0);
  EXPECT_TRUE(plan.problems.empty());
  EXPECT_EQ(plan.notices.size(), 1u);  // the virtual function, without --enable-sriov

  auto lost = plan_resources(config, after_the_grace_period({card(0)}), {});
  ASSERT_EQ(lost.resources[0].devices.size(), 8u);
  EXPECT_FALSE(lost.resources[0].devices[3].healthy);
}

TEST(ResourcePlan, MemoryFormGivesNoUnitsForUnknownOrTooLittleMemory) {
  ResourceConfig config;
  config.share_memory_unit_mib = 1024;
  auto unknown = card(0);
  unknown.memory_total_bytes = 0;
  auto tiny = card(1);
  tiny.memory_total_bytes = 512ull << 20;
  auto plan = plan_resources(config, present({unknown, tiny, card(2)}), {});
  ASSERT_EQ(plan.resources.size(), 1u);
  EXPECT_EQ(plan.resources[0].resource_name, "kunlunxin.com/vxpu-memory");
  ASSERT_EQ(plan.resources[0].devices.size(), 32u);
  EXPECT_EQ(plan.resources[0].devices[0].id, "uuid-2::m0");
  EXPECT_EQ(plan.problems,
            (std::vector<std::string>{
                "device xpu0 gives no kunlunxin.com/vxpu-memory units: xpud does not report its "
                "memory size",
                "device xpu1 gives no kunlunxin.com/vxpu-memory units: its memory (512 MiB) is "
                "less than one unit (1024 MiB)"}));

  // A node whose only card has no known memory still serves the resource, with no devices.
  auto none = plan_resources(config, present({unknown}), {});
  ASSERT_EQ(none.resources.size(), 1u);
  EXPECT_TRUE(none.resources[0].devices.empty());
}

TEST(ResourcePlan, MemoryFormCapsTheUnitsOfOneCard) {
  ResourceConfig config;
  config.share_memory_unit_mib = 64;  // 32 GiB: 512 units, more than one card may give
  auto plan = plan_resources(config, present({card(0)}), {});
  ASSERT_EQ(plan.resources[0].devices.size(), std::size_t{kMaxMemoryUnitsPerCard});
  EXPECT_EQ(plan.resources[0].devices.back().id, "uuid-0::m255");
  EXPECT_EQ(plan.problems,
            std::vector<std::string>{
                "device xpu0 gives only 256 of its 512 kunlunxin.com/vxpu-memory units (the most "
                "one card may give); a larger --xpu-share-memory-unit-mib offers all of its "
                "memory"});
}

TEST(ResourcePlan, MemoryFormLeavesOutCardsWhoseUnitIdsWouldBeTooLong) {
  ResourceConfig config;
  config.share_memory_unit_mib = 1024;  // 32 units: suffix "::m31", 5 characters
  auto fits = card(0);
  fits.uuid = std::string(58, 'a');
  auto too_long = card(1);
  too_long.uuid = std::string(59, 'b');
  auto plan = plan_resources(config, present({fits, too_long}), {});
  ASSERT_EQ(plan.resources[0].devices.size(), 32u);
  EXPECT_EQ(plan.resources[0].devices[31].id, std::string(58, 'a') + "::m31");
  EXPECT_EQ(plan.problems, std::vector<std::string>{
                               "device xpu1 is not shared: UUID '" + std::string(59, 'b') +
                               "' plus the memory unit suffix would be longer than 63 characters"});
}

TEST(ResourcePlan, MemoryFormPerModelWithSriovAndACustomDomain) {
  ResourceConfig config;
  config.resource_name = "example.com/xpu";
  config.share_memory_unit_mib = 8192;
  config.per_model = true;
  config.enable_sriov = true;
  auto plan = plan_resources(
      config, present({card(0, "P800"), card(1, "R200"), virtual_function(2, "P800")}), {});
  ASSERT_EQ(plan.resources.size(), 3u);
  EXPECT_EQ(plan.resources[0].resource_name, "example.com/P800-vxpu");
  ASSERT_EQ(plan.resources[0].devices.size(), 1u);  // virtual functions are never divided
  EXPECT_EQ(plan.resources[0].memory_unit_bytes, 0u);
  EXPECT_EQ(plan.resources[1].resource_name, "example.com/P800-vxpu-memory");
  EXPECT_EQ(plan.resources[1].socket_name, "kunlunxin-vxpu-memory-p800.sock");
  EXPECT_EQ(ids_of(plan.resources[1]),
            (std::vector<std::string>{"uuid-0::m0", "uuid-0::m1", "uuid-0::m2", "uuid-0::m3"}));
  EXPECT_EQ(plan.resources[1].memory_unit_bytes, 8ull << 30);
  EXPECT_EQ(plan.resources[2].resource_name, "example.com/R200-vxpu-memory");
  EXPECT_EQ(plan.resources[2].socket_name, "kunlunxin-vxpu-memory-r200.sock");

  // Without per-model names: the domain of --resource-name.
  config.per_model = false;
  config.enable_sriov = false;
  auto flat = plan_resources(config, present({card(0, "P800")}), {});
  ASSERT_EQ(flat.resources.size(), 1u);
  EXPECT_EQ(flat.resources[0].resource_name, "example.com/vxpu-memory");
}

// A PF with SR-IOV on has no compute of its own (the vendor's device plugin skips it as "PF
// node"): listed by xpud, never advertised, in any mode; its virtual functions are.
xpu::DeviceInfo sriov_physical_function(unsigned index, std::string model = "R200-PF") {
  auto d = card(index, std::move(model));
  d.sriov_enabled = true;
  d.device_nodes = {"/dev/xpu" + std::to_string(index), "/dev/xpuctrl"};
  return d;
}

TEST(ResourcePlan, APhysicalFunctionWithSriovOnIsNeverAdvertised) {
  auto linked = card(1);
  linked.linked_devices = {0};  // a link to the PF means nothing to a pod: dropped
  const auto view = present({sriov_physical_function(0), linked, virtual_function(2, "R200-VF-16G"),
                             virtual_function(3, "R200-VF-16G")});

  auto whole = plan_resources({}, view, {});
  ASSERT_EQ(whole.resources.size(), 1u);
  ASSERT_EQ(whole.resources[0].devices.size(), 1u);
  EXPECT_EQ(whole.resources[0].devices[0].id, "uuid-1");
  EXPECT_TRUE(whole.resources[0].devices[0].linked_ids.empty());
  EXPECT_TRUE(whole.problems.empty());
  EXPECT_EQ(
      whole.notices,
      (std::vector<std::string>{
          "SR-IOV virtual functions xpu2, xpu3 are not advertised: --enable-sriov is not set",
          "physical functions xpu0 are not advertised: their SR-IOV virtual functions are on, "
          "which leaves them no compute of their own (--enable-sriov advertises the virtual "
          "functions)"}));

  ResourceConfig sriov;
  sriov.enable_sriov = true;
  auto with_vfs = plan_resources(sriov, view, {});
  ASSERT_EQ(find_resource(with_vfs, "kunlunxin.com/xpu")->devices.size(), 1u);
  const auto* vfs = find_resource(with_vfs, "kunlunxin.com/vxpu");
  ASSERT_NE(vfs, nullptr);
  ASSERT_EQ(vfs->devices.size(), 2u);
  EXPECT_EQ(vfs->devices[0].id, "vf-uuid-2");
  EXPECT_EQ(vfs->devices[0].model, "R200-VF-16G");
  EXPECT_EQ(with_vfs.notices,
            std::vector<std::string>{"physical functions xpu0 are not advertised: their SR-IOV "
                                     "virtual functions are on, which leaves them no compute of "
                                     "their own"});

  ResourceConfig shared;
  shared.share_replicas = 2;
  shared.enable_sriov = true;
  auto replicas = plan_resources(shared, view, {});
  const auto* shared_cards = find_resource(replicas, "kunlunxin.com/xpu-shared");
  ASSERT_NE(shared_cards, nullptr);
  std::vector<std::string> ids;
  for (const auto& d : shared_cards->devices) ids.push_back(d.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"uuid-1::0", "uuid-1::1"}));

  ResourceConfig per_model;
  per_model.per_model = true;
  auto by_model = plan_resources(per_model, view, {});
  EXPECT_EQ(find_resource(by_model, "kunlunxin.com/R200-PF"), nullptr);
}

}  // namespace
}  // namespace shim
