#include "k8s-shim/device_plugin/container_allocation.h"

#include <gtest/gtest.h>

namespace shim {
namespace {

ResourceState three_cards() {
  ResourceState state{"kunlunxin.com/xpu", "kunlunxin-xpu.sock", {}};
  for (unsigned i : {1u, 3u, 6u}) {
    PluginDevice d;
    d.id = "uuid-" + std::to_string(i);
    d.index = i;
    d.healthy = true;
    d.memory_total_bytes = 32ull << 30;
    state.devices.push_back(d);
  }
  state.devices[2].healthy = false;
  state.devices[2].unhealthy_reason = "test fault";
  return state;
}

TEST(ContainerAllocation, DeviceNodesAndEnvironmentInHostIndexOrder) {
  auto allocation = allocate_container(three_cards(), {"uuid-3", "uuid-1"});
  ASSERT_TRUE(allocation.ok()) << allocation.error();
  const std::vector<DeviceNode> nodes = {
      {"/dev/xpu1", "/dev/xpu1", "rw"}, {"/dev/xpu3", "/dev/xpu3", "rw"}, {"/dev/xpuctrl", "/dev/xpuctrl", "rw"}};
  EXPECT_EQ(allocation->device_nodes, nodes);
  const std::map<std::string, std::string> envs = {{"KUNLUNXIN_XPU_UUIDS", "uuid-1,uuid-3"},
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
  EXPECT_EQ(error_of({"uuid-1", "nope"}), "device 'nope' is not a kunlunxin.com/xpu device of this node");
  EXPECT_EQ(error_of({"uuid-1", "uuid-6"}), "device 'uuid-6' (xpu6) is Unhealthy: test fault");
  EXPECT_EQ(error_of({"uuid-1", "uuid-1"}), "device 'uuid-1' is requested twice");
  EXPECT_EQ(error_of({}), "no device IDs requested");
}

}  // namespace
}  // namespace shim
