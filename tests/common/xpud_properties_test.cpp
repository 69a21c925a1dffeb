// The client's reading of xpud's property maps: complete devices, optional newer properties,
// and malformed or hostile replies turned into errors.
#include "common/xpud_properties.h"

#include <gtest/gtest.h>

#include "common/names.h"

namespace xpu {
namespace {

namespace property = names::property;

PropertyMap device_properties() {
  PropertyMap p;
  p[std::string(property::kIndex)] = sdbus::Variant(uint32_t{3});
  p[std::string(property::kName)] = sdbus::Variant(std::string("xpu3"));
  p[std::string(property::kUuid)] =
      sdbus::Variant(std::string("fa4e0000-0000-4000-8000-000000000003"));
  p[std::string(property::kSerial)] = sdbus::Variant(std::string("02K00FAKE0003"));
  p[std::string(property::kModel)] = sdbus::Variant(std::string("R200"));
  p[std::string(property::kPciBusId)] = sdbus::Variant(std::string("0000:3e:00.0"));
  p[std::string(property::kNumaNode)] = sdbus::Variant(int32_t{1});
  p[std::string(property::kMemoryTotalBytes)] = sdbus::Variant(uint64_t{32} << 30);
  p[std::string(property::kDeviceNodes)] =
      sdbus::Variant(std::vector<std::string>{"/dev/xpu3", "/dev/xpuctrl"});
  p[std::string(property::kLinkedDevices)] = sdbus::Variant(std::vector<uint32_t>{0, 1, 2, 7});
  p[std::string(property::kHealth)] = sdbus::Variant(std::string("Unhealthy"));
  p[std::string(property::kHealthReason)] =
      sdbus::Variant(std::string("driver reports state ERROR (207)"));
  p[std::string(property::kIsVirtualFunction)] = sdbus::Variant(false);
  return p;
}

TEST(XpudProperties, ACompleteDevice) {
  auto p = device_properties();
  p[std::string(property::kHealthReasonKind)] = sdbus::Variant(std::string("driver_fault"));
  p[std::string(property::kHealthTransitions)] =
      sdbus::Variant(std::map<std::string, uint64_t>{{"Healthy", 1}, {"Unhealthy", 2}});
  p[std::string(property::kPcieRoot)] = sdbus::Variant(std::string("pci0000:3a"));
  auto device = parse_device(p);
  ASSERT_TRUE(device) << device.error();
  EXPECT_EQ(device->index, 3u);
  EXPECT_EQ(device->pci_bus_id, "0000:3e:00.0");
  EXPECT_EQ(device->pcie_root, "pci0000:3a");
  EXPECT_EQ(device->numa_node, 1);
  EXPECT_EQ(device->memory_total_bytes, std::uint64_t{32} << 30);
  EXPECT_EQ(device->linked_devices, (std::vector<unsigned>{0, 1, 2, 7}));
  EXPECT_FALSE(device->healthy);
  EXPECT_EQ(device->health_reason_kind, "driver_fault");
  EXPECT_EQ(device->health_transitions.at("Unhealthy"), 2u);
  EXPECT_FALSE(device->sriov_enabled);

  p[std::string(property::kSriovEnabled)] = sdbus::Variant(true);
  auto pf = parse_device(p);
  ASSERT_TRUE(pf) << pf.error();
  EXPECT_TRUE(pf->sriov_enabled);
}

TEST(XpudProperties, AnOlderXpudWithoutTheNewerPropertiesStillWorks) {
  auto device = parse_device(device_properties());
  ASSERT_TRUE(device) << device.error();
  EXPECT_EQ(device->health_reason_kind, "");
  EXPECT_TRUE(device->health_transitions.empty());
  EXPECT_FALSE(device->sriov_enabled);  // before SriovEnabled, an SR-IOV PF read as a VF
  EXPECT_EQ(device->pcie_root, "");     // unknown, as xpud says when it cannot tell
}

TEST(XpudProperties, MalformedDevicesAreErrors) {
  auto missing = device_properties();
  missing.erase(std::string(property::kUuid));
  EXPECT_FALSE(parse_device(missing));

  auto mistyped = device_properties();
  mistyped[std::string(property::kIndex)] = sdbus::Variant(std::string("3"));
  EXPECT_FALSE(parse_device(mistyped));

  auto empty_uuid = device_properties();
  empty_uuid[std::string(property::kUuid)] = sdbus::Variant(std::string());
  auto result = parse_device(empty_uuid);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error(), "empty Uuid");

  auto odd_health = device_properties();
  odd_health[std::string(property::kHealth)] = sdbus::Variant(std::string("Sideways"));
  result = parse_device(odd_health);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error(), "Health is 'Sideways'");

  // A newer optional property with the wrong type is ignored, not trusted.
  auto odd_kind = device_properties();
  odd_kind[std::string(property::kHealthReasonKind)] = sdbus::Variant(uint32_t{7});
  auto tolerated = parse_device(odd_kind);
  ASSERT_TRUE(tolerated) << tolerated.error();
  EXPECT_EQ(tolerated->health_reason_kind, "");

  auto odd_root = device_properties();
  odd_root[std::string(property::kPcieRoot)] = sdbus::Variant(int32_t{0});
  tolerated = parse_device(odd_root);
  ASSERT_TRUE(tolerated) << tolerated.error();
  EXPECT_EQ(tolerated->pcie_root, "");
}

TEST(XpudProperties, ManagerNeedsEveryProperty) {
  PropertyMap p;
  p[std::string(property::kVersion)] = sdbus::Variant(std::string("0.1.0"));
  p[std::string(property::kBackend)] = sdbus::Variant(std::string("xpuml"));
  p[std::string(property::kDriverVersion)] = sdbus::Variant(std::string("5.0.21.21"));
  p[std::string(property::kDeviceCount)] = sdbus::Variant(uint32_t{8});
  p[std::string(property::kHealthyDeviceCount)] = sdbus::Variant(uint32_t{7});
  auto manager = parse_manager(p);
  ASSERT_TRUE(manager) << manager.error();
  EXPECT_EQ(manager->backend, "xpuml");
  EXPECT_EQ(manager->healthy_device_count, 7u);
  p.erase(std::string(property::kDeviceCount));
  EXPECT_FALSE(parse_manager(p));
}

}  // namespace
}  // namespace xpu
