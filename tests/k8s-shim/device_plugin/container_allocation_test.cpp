#include "k8s-shim/device_plugin/container_allocation.h"

#include <gtest/gtest.h>

#include "tests/support/resource_state_builder.h"

namespace shim {
namespace {

ResourceState three_cards() {
  ResourceState state = xpu::test::whole_cards({1, 3, 6});
  state.devices[2].healthy = false;
  state.devices[2].unhealthy_reason = "test fault";
  return state;
}

TEST(ContainerAllocation, DeviceNodesAndEnvironmentInHostIndexOrder) {
  auto allocation = allocate_container(three_cards(), {"uuid-3", "uuid-1"});
  ASSERT_TRUE(allocation.ok()) << allocation.error();
  const std::vector<DeviceNode> nodes = {{"/dev/xpu1", "/dev/xpu1", "rw"},
                                         {"/dev/xpu3", "/dev/xpu3", "rw"},
                                         {"/dev/xpuctrl", "/dev/xpuctrl", "rw"}};
  EXPECT_EQ(allocation->device_nodes, nodes);
  // CXPU_VISIBLE_DEVICES: the vendor's runtime injects what it names, and the vendor's base
  // images set it to "all"; the response overrides the image's value with exactly these cards.
  const std::map<std::string, std::string> envs = {{"CXPU_VISIBLE_DEVICES", "1,3"},
                                                   {"KUNLUNXIN_XPU_UUIDS", "uuid-1,uuid-3"},
                                                   {"XPU_VISIBLE_DEVICES", "1,3"}};
  EXPECT_EQ(allocation->envs, envs);
  ASSERT_EQ(allocation->granted.size(), 2u);
  EXPECT_EQ(allocation->granted[0].index, 1u);
}

TEST(ContainerAllocation, SingleCard) {
  auto allocation = allocate_container(three_cards(), {"uuid-3"});
  ASSERT_TRUE(allocation.ok()) << allocation.error();
  EXPECT_EQ(allocation->device_nodes.size(), 2u);
  EXPECT_EQ(allocation->envs.at("XPU_VISIBLE_DEVICES"), "3");
  EXPECT_EQ(allocation->envs.at("KUNLUNXIN_XPU_UUIDS"), "uuid-3");
}

TEST(ContainerAllocation, FailsAsAWholeNamingTheDevice) {
  auto error_of = [](std::vector<std::string> ids) {
    auto allocation = allocate_container(three_cards(), ids);
    return allocation.ok() ? std::string("(granted)") : allocation.error();
  };
  EXPECT_EQ(error_of({"uuid-1", "nope"}),
            "device 'nope' is not a kunlunxin.com/xpu device of this node");
  EXPECT_EQ(error_of({"uuid-1", "uuid-6"}), "device 'uuid-6' (xpu6) is Unhealthy: test fault");
  EXPECT_EQ(error_of({"uuid-1", "uuid-1"}), "device 'uuid-1' is requested twice");
  EXPECT_EQ(error_of({}), "no device IDs requested");
}

// Found by fuzz/device_plugin_fuzzer: an ID with a newline went as it was into the refusal, which
// the plugin logs and returns as the gRPC status, so a request could forge a log line.
TEST(ContainerAllocation, RefusalEscapesTheRequestedId) {
  auto allocation = allocate_container(three_cards(), {"uuid-0\nforged line", "uuid-1"});
  ASSERT_FALSE(allocation.ok());
  EXPECT_EQ(allocation.error(),
            "device 'uuid-0\\x0aforged line' is not a kunlunxin.com/xpu device of this node");
  allocation = allocate_container(three_cards(), {std::string(200, 'x')});
  ASSERT_FALSE(allocation.ok());
  EXPECT_EQ(allocation.error(), "device '" + std::string(80, 'x') +
                                    "...' is not a kunlunxin.com/xpu device of this node");
}

TEST(ContainerAllocation, VirtualFunctionGetsItsOwnNodes) {
  ResourceState state{"kunlunxin.com/vxpu", "kunlunxin-vxpu.sock", {}};
  for (unsigned i : {8u, 9u}) {
    PluginDevice d;
    d.id = "vf-" + std::to_string(i);
    d.card_id = d.id;
    d.index = i;
    d.healthy = true;
    d.virtual_function = true;
    d.device_nodes = {"/dev/xpuctrl", "/dev/xpu" + std::to_string(i)};
    state.devices.push_back(d);
  }
  auto allocation = allocate_container(state, {"vf-9", "vf-8"});
  ASSERT_TRUE(allocation.ok()) << allocation.error();
  const std::vector<DeviceNode> nodes = {{"/dev/xpu8", "/dev/xpu8", "rw"},
                                         {"/dev/xpu9", "/dev/xpu9", "rw"},
                                         {"/dev/xpuctrl", "/dev/xpuctrl", "rw"}};
  EXPECT_EQ(allocation->device_nodes, nodes);
  EXPECT_EQ(allocation->envs.at("XPU_VISIBLE_DEVICES"), "8,9");
  EXPECT_EQ(allocation->envs.at("CXPU_VISIBLE_DEVICES"), "8,9");
  EXPECT_EQ(allocation->envs.at("KUNLUNXIN_XPU_UUIDS"), "vf-8,vf-9");
}

// Cards 0, 2, 5 with four replicas each; card 5 unhealthy.
ResourceState shared_cards() {
  ResourceState state = xpu::test::shared_cards({0, 2, 5}, 4);
  for (auto& d : state.devices)
    if (d.index == 5) {
      d.healthy = false;
      d.unhealthy_reason = "test fault";
    }
  return state;
}

TEST(ContainerAllocation, SharedReplicasMapBackToTheirCardOnce) {
  auto allocation = allocate_container(shared_cards(), {"uuid-0::3", "uuid-0::1"});
  ASSERT_TRUE(allocation.ok()) << allocation.error();
  const std::vector<DeviceNode> nodes = {{"/dev/xpu0", "/dev/xpu0", "rw"},
                                         {"/dev/xpuctrl", "/dev/xpuctrl", "rw"}};
  EXPECT_EQ(allocation->device_nodes, nodes);
  EXPECT_EQ(allocation->envs.at("XPU_VISIBLE_DEVICES"), "0");
  EXPECT_EQ(allocation->envs.at("KUNLUNXIN_XPU_UUIDS"), "uuid-0");
  ASSERT_EQ(allocation->granted.size(), 1u);

  auto two_cards = allocate_container(shared_cards(), {"uuid-2::0", "uuid-0::2", "uuid-2::3"});
  ASSERT_TRUE(two_cards.ok()) << two_cards.error();
  const std::vector<DeviceNode> both = {{"/dev/xpu0", "/dev/xpu0", "rw"},
                                        {"/dev/xpu2", "/dev/xpu2", "rw"},
                                        {"/dev/xpuctrl", "/dev/xpuctrl", "rw"}};
  EXPECT_EQ(two_cards->device_nodes, both);
  EXPECT_EQ(two_cards->envs.at("XPU_VISIBLE_DEVICES"), "0,2");
  EXPECT_EQ(two_cards->envs.at("CXPU_VISIBLE_DEVICES"), "0,2");
  EXPECT_EQ(two_cards->envs.at("KUNLUNXIN_XPU_UUIDS"), "uuid-0,uuid-2");

  auto sick = allocate_container(shared_cards(), {"uuid-0::0", "uuid-5::1"});
  ASSERT_FALSE(sick.ok());
  EXPECT_EQ(sick.error(), "device 'uuid-5::1' (xpu5) is Unhealthy: test fault");
  auto twice = allocate_container(shared_cards(), {"uuid-0::0", "uuid-0::0"});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error(), "device 'uuid-0::0' is requested twice");
  auto whole_card = allocate_container(shared_cards(), {"uuid-0"});
  ASSERT_FALSE(whole_card.ok());
  EXPECT_EQ(whole_card.error(),
            "device 'uuid-0' is not a kunlunxin.com/xpu-shared device of this node");
}

// Memory units of 1 GiB: card 0 with 32, card 2 with 16, card 5 (unhealthy) with 8.
ResourceState memory_unit_cards() {
  ResourceState state = xpu::test::memory_unit_cards({0, 2, 5}, {32, 16, 8});
  for (auto& d : state.devices)
    if (d.index == 5) {
      d.healthy = false;
      d.unhealthy_reason = "test fault";
    }
  return state;
}

TEST(ContainerAllocation, MemoryUnitsOnOneCardGrantTheirBytes) {
  auto allocation = allocate_container(memory_unit_cards(),
                                       {"uuid-2::m3", "uuid-2::m0", "uuid-2::m15", "uuid-2::m7"});
  ASSERT_TRUE(allocation.ok()) << allocation.error();
  const std::vector<DeviceNode> nodes = {{"/dev/xpu2", "/dev/xpu2", "rw"},
                                         {"/dev/xpuctrl", "/dev/xpuctrl", "rw"}};
  EXPECT_EQ(allocation->device_nodes, nodes);
  const std::map<std::string, std::string> envs = {
      {"XPU_VISIBLE_DEVICES", "2"},
      {"CXPU_VISIBLE_DEVICES", "2"},
      {"KUNLUNXIN_XPU_UUIDS", "uuid-2"},
      {"CXPU_CONTAINER_MEMORY_LIMIT", std::to_string(4ull << 30)}};
  EXPECT_EQ(allocation->envs, envs);
  EXPECT_EQ(allocation->memory_limit_bytes, 4ull << 30);
  ASSERT_EQ(allocation->granted.size(), 1u);
}

TEST(ContainerAllocation, MemoryUnitsOverTwoCardsAreBoundedByTheCardWithFewest) {
  // Three units on card 0, one on card 2: the runtime splits the limit evenly over the two
  // cards, so the limit is 1 unit x 2 cards, never more than card 2 was granted.
  auto allocation = allocate_container(memory_unit_cards(),
                                       {"uuid-0::m1", "uuid-2::m9", "uuid-0::m0", "uuid-0::m2"});
  ASSERT_TRUE(allocation.ok()) << allocation.error();
  EXPECT_EQ(allocation->envs.at("XPU_VISIBLE_DEVICES"), "0,2");
  EXPECT_EQ(allocation->envs.at("CXPU_VISIBLE_DEVICES"), "0,2");
  EXPECT_EQ(allocation->envs.at("KUNLUNXIN_XPU_UUIDS"), "uuid-0,uuid-2");
  EXPECT_EQ(allocation->envs.at("CXPU_CONTAINER_MEMORY_LIMIT"), std::to_string(2ull << 30));
  EXPECT_EQ(allocation->granted.size(), 2u);

  auto even = allocate_container(memory_unit_cards(),
                                 {"uuid-0::m4", "uuid-0::m5", "uuid-2::m0", "uuid-2::m1"});
  ASSERT_TRUE(even.ok()) << even.error();
  EXPECT_EQ(even->envs.at("CXPU_CONTAINER_MEMORY_LIMIT"), std::to_string(4ull << 30));
}

TEST(ContainerAllocation, MemoryUnitRequestsTheKubeletGetsWrongAreRefused) {
  auto unknown = allocate_container(memory_unit_cards(), {"uuid-0::m0", "uuid-0::m32"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error(),
            "device 'uuid-0::m32' is not a kunlunxin.com/vxpu-memory device of this node");
  auto replica = allocate_container(memory_unit_cards(), {"uuid-0::0"});
  ASSERT_FALSE(replica.ok());
  EXPECT_EQ(replica.error(),
            "device 'uuid-0::0' is not a kunlunxin.com/vxpu-memory device of this node");
  auto whole = allocate_container(memory_unit_cards(), {"uuid-0"});
  ASSERT_FALSE(whole.ok());
  auto twice = allocate_container(memory_unit_cards(), {"uuid-0::m1", "uuid-0::m1"});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error(), "device 'uuid-0::m1' is requested twice");
  auto sick = allocate_container(memory_unit_cards(), {"uuid-5::m0"});
  ASSERT_FALSE(sick.ok());
  EXPECT_EQ(sick.error(), "device 'uuid-5::m0' (xpu5) is Unhealthy: test fault");
  ASSERT_FALSE(allocate_container(memory_unit_cards(), {}).ok());
}

TEST(ContainerAllocation, ReplicasAndWholeCardsGetNoMemoryLimit) {
  auto replicas = allocate_container(shared_cards(), {"uuid-0::3"});
  ASSERT_TRUE(replicas.ok()) << replicas.error();
  EXPECT_FALSE(replicas->envs.contains("CXPU_CONTAINER_MEMORY_LIMIT"));
  EXPECT_EQ(replicas->memory_limit_bytes, 0u);
  auto whole = allocate_container(three_cards(), {"uuid-3"});
  ASSERT_TRUE(whole.ok()) << whole.error();
  EXPECT_FALSE(whole->envs.contains("CXPU_CONTAINER_MEMORY_LIMIT"));
}

TEST(ContainerAllocation, CdiOffGivesNoCdiNames) {
  auto allocation = allocate_container(three_cards(), {"uuid-3"}, CdiMode::kOff);
  ASSERT_TRUE(allocation.ok()) << allocation.error();
  EXPECT_TRUE(allocation->cdi_devices.empty());
  EXPECT_EQ(allocation->device_nodes.size(), 2u);
}

TEST(ContainerAllocation, CdiAutoGivesTheCardsCdiNameBesideTheRawNodes) {
  auto allocation = allocate_container(three_cards(), {"uuid-3"}, CdiMode::kAuto);
  ASSERT_TRUE(allocation.ok()) << allocation.error();
  EXPECT_EQ(allocation->cdi_devices, std::vector<std::string>{"kunlunxin.com/xpu=uuid-3"});
  const std::vector<DeviceNode> nodes = {{"/dev/xpu3", "/dev/xpu3", "rw"},
                                         {"/dev/xpuctrl", "/dev/xpuctrl", "rw"}};
  EXPECT_EQ(allocation->device_nodes, nodes);
  EXPECT_EQ(allocation->envs.at("XPU_VISIBLE_DEVICES"), "3");
}

TEST(ContainerAllocation, CdiTrueGivesTheCdiNameInsteadOfRawNodes) {
  auto allocation = allocate_container(three_cards(), {"uuid-1"}, CdiMode::kOn);
  ASSERT_TRUE(allocation.ok()) << allocation.error();
  EXPECT_EQ(allocation->cdi_devices, std::vector<std::string>{"kunlunxin.com/xpu=uuid-1"});
  EXPECT_TRUE(allocation->device_nodes.empty());
  // The environment still comes from the response too: it agrees with the spec's entry.
  EXPECT_EQ(allocation->envs.at("XPU_VISIBLE_DEVICES"), "1");
  EXPECT_EQ(allocation->envs.at("CXPU_VISIBLE_DEVICES"), "1");
  EXPECT_EQ(allocation->envs.at("KUNLUNXIN_XPU_UUIDS"), "uuid-1");
}

TEST(ContainerAllocation, SeveralCardsGetRawNodesOnlyWhateverTheCdiMode) {
  // Per-card CDI entries would each set XPU_VISIBLE_DEVICES, and the last would win.
  for (CdiMode mode : {CdiMode::kAuto, CdiMode::kOn}) {
    auto allocation = allocate_container(three_cards(), {"uuid-3", "uuid-1"}, mode);
    ASSERT_TRUE(allocation.ok()) << allocation.error();
    EXPECT_TRUE(allocation->cdi_devices.empty());
    EXPECT_EQ(allocation->device_nodes.size(), 3u);
    EXPECT_EQ(allocation->envs.at("XPU_VISIBLE_DEVICES"), "1,3");
  }
}

TEST(ContainerAllocation, CdiNamesASharedCardByItsUuidAndAnOddUuidByIndex) {
  auto replicas = allocate_container(shared_cards(), {"uuid-0::3", "uuid-0::1"}, CdiMode::kOn);
  ASSERT_TRUE(replicas.ok()) << replicas.error();
  EXPECT_EQ(replicas->cdi_devices, std::vector<std::string>{"kunlunxin.com/xpu=uuid-0"});

  ResourceState state = three_cards();
  state.devices[0].id =
      "odd_";  // a valid device-plugin ID, but no CDI name: xpud's spec has index 1
  auto odd = allocate_container(state, {"odd_"}, CdiMode::kAuto);
  ASSERT_TRUE(odd.ok()) << odd.error();
  EXPECT_EQ(odd->cdi_devices, std::vector<std::string>{"kunlunxin.com/xpu=1"});
  // A UUID that is another card's index (or "all") would name the wrong card(s): the index.
  state.devices[1].id = "1";
  auto shadow = allocate_container(state, {"1"}, CdiMode::kAuto);
  ASSERT_TRUE(shadow.ok()) << shadow.error();
  EXPECT_EQ(shadow->cdi_devices, std::vector<std::string>{"kunlunxin.com/xpu=3"});
}

}  // namespace
}  // namespace shim
