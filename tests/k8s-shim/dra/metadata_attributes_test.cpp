#include "k8s-shim/dra/metadata_attributes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s-shim/dra/slices/slice_content.h"
#include "tests/support/card_builder.h"

namespace shim::dra {
namespace {

using xpu::test::card;

// Two linked cards behind one root, the second unhealthy, and a VF of card 1 with SR-IOV on.
xpu::DeviceView view() {
  xpu::DeviceView v;
  v.xpud_present = true;
  v.manager.driver_version = "5.0.21.6";
  v.devices.push_back(card(0)
                          .uuid("KL-UUID-0")
                          .model("P800")
                          .pci_bus_id("0000:3b:00.0")
                          .pcie_root("pci0000:3a")
                          .numa_node(0)
                          .memory_total_bytes(std::uint64_t{96} << 30)
                          .linked_devices({2}));
  v.devices.push_back(card(2)
                          .uuid("KL-UUID-2")
                          .model("P800")
                          .pci_bus_id("0000:3c:00.0")
                          .numa_node(-1)
                          .memory_total_bytes(std::uint64_t{96} << 30)
                          .unhealthy("driver fault")
                          .linked_devices({0}));
  return v;
}

TEST(dra_MetadataAttributes, ACardsAreWhatItsSliceSaysWithoutHealthAndWithItsMemory) {
  const DeviceAttributes got = metadata_attributes(view(), "xpu-0", std::nullopt);
  // Every published attribute but healthy, as the slice publishes it.
  SliceDevice published = desired_slice(view(), "node-a", 1).devices.at(0);
  ASSERT_EQ(published.name, "xpu-0");
  DeviceAttributes expected = published.attributes;
  expected.erase("healthy");
  expected["memory"] = std::int64_t{96} << 30;
  EXPECT_EQ(got, expected);
  // And by value, so that the slice's spelling is pinned here too.
  EXPECT_EQ(got.at("model"), AttributeValue(std::string("P800")));
  EXPECT_EQ(got.at("uuid"), AttributeValue(std::string("KL-UUID-0")));
  EXPECT_EQ(got.at("index"), AttributeValue(std::int64_t{0}));
  EXPECT_EQ(got.at("linkGroup"), AttributeValue(std::int64_t{0}));
  EXPECT_EQ(got.at("driverVersion"), AttributeValue(Version{"5.0.21+6"}));
  EXPECT_EQ(got.at("resource.kubernetes.io/pciBusID"), AttributeValue(std::string("0000:3b:00.0")));
  EXPECT_EQ(got.at("resource.kubernetes.io/pcieRoot"), AttributeValue(std::string("pci0000:3a")));
  EXPECT_FALSE(got.contains("healthy"));
  // Unknown values stay out, as from the slice.
  const DeviceAttributes second = metadata_attributes(view(), "xpu-2", std::nullopt);
  EXPECT_FALSE(second.contains("numaNode"));
  EXPECT_FALSE(second.contains("resource.kubernetes.io/pcieRoot"));
  EXPECT_EQ(second.at("linkGroup"), AttributeValue(std::int64_t{0}));
}

TEST(dra_MetadataAttributes, AShareCarriesItsCardsAttributesAndItsGrant) {
  DeviceAttributes share = metadata_attributes(view(), "xpu-0-shared", std::int64_t{8} << 30);
  DeviceAttributes card = metadata_attributes(view(), "xpu-0", std::nullopt);
  EXPECT_EQ(share.at("memory"), AttributeValue(std::int64_t{8} << 30));
  share.erase("memory");
  card.erase("memory");
  EXPECT_EQ(share, card);
}

TEST(dra_MetadataAttributes, AVirtualFunctionNamesItsPhysicalFunction) {
  xpu::DeviceView v = view();
  v.devices[1].sriov_enabled = true;
  v.devices.push_back(card(5)
                          .name("")
                          .pci_bus_id("0000:3c:00.1")
                          .memory_total_bytes(std::uint64_t{24} << 30)
                          .virtual_function());
  v.devices.back().physical_function = "0000:3c:00.0";
  const DeviceAttributes vf = metadata_attributes(v, "xpu-5", std::nullopt);
  EXPECT_EQ(vf.at("physicalFunction"), AttributeValue(std::string("0000:3c:00.0")));
  EXPECT_EQ(vf.at("memory"), AttributeValue(std::int64_t{24} << 30));
  // The PF with SR-IOV on is not published, and so has nothing to say.
  EXPECT_TRUE(metadata_attributes(v, "xpu-2", std::nullopt).empty());
  EXPECT_TRUE(metadata_attributes(v, "xpu-9", std::nullopt).empty());
  EXPECT_TRUE(metadata_attributes(v, "../x", std::nullopt).empty());
}

TEST(dra_MetadataAttributes, AFunctionOnVfioIsWhatItsSliceSays) {
  xpu::DeviceView v = view();
  v.vfio_functions = {xpu::test::on_vfio("0000:5e:00.0", "12")};
  const DeviceAttributes got = metadata_attributes(v, "vfio-0000-5e-00-0", std::nullopt);
  EXPECT_EQ(got.at("pciBusId"), AttributeValue(std::string("0000:5e:00.0")));
  EXPECT_EQ(got.at("iommuGroup"), AttributeValue(std::int64_t{12}));
  EXPECT_EQ(got.at("vfio"), AttributeValue(true));
  EXPECT_FALSE(got.contains("memory"));  // a VM takes it whole: no capacity published
  EXPECT_TRUE(metadata_attributes(v, "vfio-0000-5e-00-1", std::nullopt).empty());
}

}  // namespace
}  // namespace shim::dra
