// The device plugin's resource for functions on vfio-pci (kunlunxin.com/xpu_vfio): what it
// advertises beside the compute resources, that no card is in both pools, and what a
// KubeVirt virt-launcher pod gets from Allocate.
#include "k8s-shim/device_plugin/vfio_resource.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "k8s-shim/device_plugin/container_allocation.h"
#include "k8s-shim/device_plugin/resource_plan.h"
#include "k8s-shim/device_plugin/topology_allocator.h"
#include "tests/support/card_builder.h"

namespace shim {
namespace {

using xpu::test::on_vfio;

using ::testing::HasSubstr;

xpu::DeviceInfo card(unsigned index, std::string pci_bus_id) {
  return xpu::test::card(index).pci_bus_id(std::move(pci_bus_id)).memory_total_bytes(32ull << 30);
}

const ResourceState* find(const ResourcePlan& plan, const std::string& name) {
  for (const auto& state : plan.resources)
    if (state.resource_name == name) return &state;
  return nullptr;
}

// Two cards on kunlun, one function given to VMs before, and one card xpud still lists as a
// card while its Vfio list already has it (a discovery not yet run after the move).
xpu::DeviceView node() {
  auto view = xpu::test::present({card(0, "0000:3b:00.0"), card(1, "0000:3d:00.0")});
  view.vfio_functions = {on_vfio("0000:5e:00.0", "7"), on_vfio("0000:3d:00.0", "9")};
  return view;
}

TEST(VfioResource, AdvertisedBesideTheCardsAndNoCardInBoth) {
  for (const ResourceConfig& config :
       {ResourceConfig{}, ResourceConfig{.share_replicas = 2},
        ResourceConfig{.share_memory_unit_mib = 4096}, ResourceConfig{.per_model = true}}) {
    auto plan = plan_resources(config, node(), {});
    const auto* vfio = find(plan, "kunlunxin.com/xpu_vfio");
    ASSERT_NE(vfio, nullptr);
    EXPECT_EQ(vfio->socket_name, "kunlunxin-xpu-vfio.sock");
    EXPECT_TRUE(vfio->vfio);
    ASSERT_EQ(vfio->devices.size(), 2u);
    EXPECT_EQ(vfio->devices[0].id, "0000:3d:00.0");
    EXPECT_EQ(vfio->devices[1].id, "0000:5e:00.0");
    EXPECT_EQ(vfio->devices[1].numa_node, 1);
    EXPECT_TRUE(vfio->devices[1].healthy);
    // Card 1 (0000:3d:00.0) is in no compute resource, whole, shared or per model.
    std::set<unsigned> compute_cards;
    for (const auto& state : plan.resources)
      if (!state.vfio)
        for (const auto& device : state.devices) compute_cards.insert(device.index);
    EXPECT_EQ(compute_cards, std::set<unsigned>{0});
    ASSERT_EQ(plan.notices.size(), 1u);
    EXPECT_THAT(plan.notices[0], HasSubstr("devices xpu1 are on vfio-pci"));
  }
}

TEST(VfioResource, NoResourceUntilAFunctionIsOnVfioPciThenKeptEmpty) {
  auto view = xpu::test::present({card(0, "0000:3b:00.0")});
  auto plan = plan_resources({}, view, {});
  EXPECT_EQ(find(plan, "kunlunxin.com/xpu_vfio"), nullptr);
  // Once served, the resource stays with no devices, so the kubelet sees 0 rather than a
  // vanished plugin.
  plan = plan_resources({}, view, {{"kunlunxin.com/xpu_vfio", "kunlunxin-xpu-vfio.sock"}});
  const auto* vfio = find(plan, "kunlunxin.com/xpu_vfio");
  ASSERT_NE(vfio, nullptr);
  EXPECT_TRUE(vfio->devices.empty());
}

TEST(VfioResource, WhatXpudShouldNeverSendIsNotAdvertised) {
  auto view = xpu::test::present({});
  view.vfio_functions = {on_vfio("0000:5e:00.0", "../7"), on_vfio("0000:5f:00.0", ""),
                         on_vfio("0000:60:00.0", "3"), on_vfio("0000:60:00.0", "3"),
                         on_vfio("bad id with spaces", "4")};
  auto plan = plan_resources({}, view, {});
  const auto* vfio = find(plan, "kunlunxin.com/xpu_vfio");
  ASSERT_NE(vfio, nullptr);
  ASSERT_EQ(vfio->devices.size(), 1u);
  EXPECT_EQ(vfio->devices[0].id, "0000:60:00.0");
  ASSERT_EQ(plan.problems.size(), 4u);
  EXPECT_THAT(plan.problems[0], HasSubstr("IOMMU group '../7' is not a group number"));
  EXPECT_THAT(plan.problems[2], HasSubstr("xpud lists it twice"));
}

TEST(VfioResource, AllocateGivesTheGroupsAndTheAddressesKubevirtReads) {
  auto plan = plan_resources({}, node(), {});
  const auto* vfio = find(plan, "kunlunxin.com/xpu_vfio");
  ASSERT_NE(vfio, nullptr);
  auto allocation = allocate_container(*vfio, {"0000:5e:00.0", "0000:3d:00.0"});
  ASSERT_TRUE(allocation.ok()) << allocation.error();
  ASSERT_EQ(allocation->device_nodes.size(), 3u);
  EXPECT_EQ(allocation->device_nodes[0], (DeviceNode{"/dev/vfio/9", "/dev/vfio/9", "mrw"}));
  EXPECT_EQ(allocation->device_nodes[1], (DeviceNode{"/dev/vfio/7", "/dev/vfio/7", "mrw"}));
  EXPECT_EQ(allocation->device_nodes[2], (DeviceNode{"/dev/vfio/vfio", "/dev/vfio/vfio", "mrw"}));
  // KubeVirt: PCI_RESOURCE_ + the resource name upper-cased, '/' and '.' made '_'.
  EXPECT_EQ(allocation->envs,
            (std::map<std::string, std::string>{
                {"PCI_RESOURCE_KUNLUNXIN_COM_XPU_VFIO", "0000:3d:00.0,0000:5e:00.0"}}));
  EXPECT_TRUE(allocation->cdi_devices.empty());

  auto unknown = allocate_container(*vfio, {"0000:3b:00.0"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.error(), HasSubstr("is not a kunlunxin.com/xpu_vfio device of this node"));
  EXPECT_FALSE(allocate_container(*vfio, {"0000:5e:00.0", "0000:5e:00.0"}).ok());
  EXPECT_FALSE(allocate_container(*vfio, {}).ok());
}

TEST(VfioResource, PreferredAllocationKeepsAVmsFunctionsOnOneNumaNode) {
  auto view = xpu::test::present({});
  view.vfio_functions = {on_vfio("0000:5e:00.0", "7"), on_vfio("0000:3d:00.0", "9"),
                         on_vfio("0000:b1:00.0", "30")};
  view.vfio_functions[2].numa_node = 0;
  auto plan = plan_resources({}, view, {});
  const auto* vfio = find(plan, "kunlunxin.com/xpu_vfio");
  ASSERT_NE(vfio, nullptr);
  // As the service builds it (kubelet_messages.cpp to_topology): every function is index 0.
  std::vector<TopologyDevice> devices;
  for (const auto& d : vfio->devices)
    devices.push_back(TopologyDevice{d.id, d.index, d.numa_node, d.linked_ids});
  auto chosen = TopologyAllocator(devices).preferred(
      {{"0000:b1:00.0", "0000:3d:00.0", "0000:5e:00.0"}, {}, 2});
  ASSERT_TRUE(chosen.ok()) << chosen.error();
  EXPECT_EQ(std::set<std::string>(chosen->begin(), chosen->end()),
            (std::set<std::string>{"0000:3d:00.0", "0000:5e:00.0"}));
}

TEST(VfioResource, TheEnvironmentNameFollowsTheResourceName) {
  EXPECT_EQ(xpu::names::vfio::pci_resource_env("kunlunxin.com/xpu_vfio"),
            "PCI_RESOURCE_KUNLUNXIN_COM_XPU_VFIO");
  auto view = node();
  auto plan = plan_resources({.resource_name = "example.org/xpu"}, view, {});
  const auto* vfio = find(plan, "example.org/xpu_vfio");
  ASSERT_NE(vfio, nullptr);
  auto allocation = allocate_container(*vfio, {"0000:5e:00.0"});
  ASSERT_TRUE(allocation.ok());
  EXPECT_EQ(allocation->envs.count("PCI_RESOURCE_EXAMPLE_ORG_XPU_VFIO"), 1u);
}

}  // namespace
}  // namespace shim
