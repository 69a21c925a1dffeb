#include "k8s-shim/dra/slices/slice_content.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/card_builder.h"

namespace shim::dra {
namespace {

using xpu::test::card;

// Eight cards: 0-3 and 4-7 fully linked, plus 0-4, 1-5, 2-6, 3-7, behind PCIe roots pci0000:00
// and pci0000:80; card 5 unhealthy; card 3 with no NUMA node; two virtual functions of card 0.
xpu::DeviceView eight_cards(std::string driver_version = "5.0.21") {
  xpu::DeviceView view;
  view.xpud_present = true;
  view.manager.driver_version = std::move(driver_version);
  for (unsigned i = 0; i < 8; ++i) {
    std::vector<unsigned> links;
    unsigned base = i < 4 ? 0 : 4;
    for (unsigned peer = base; peer < base + 4; ++peer)
      if (peer != i) links.push_back(peer);
    links.push_back(i < 4 ? i + 4 : i - 4);
    view.devices.push_back(card(i)
                               .uuid("XPU-UUID-" + std::to_string(i))
                               .model("P800")
                               .pci_bus_id("0000:0" + std::to_string(i) + ":00.0")
                               .pcie_root(i < 4 ? "pci0000:00" : "pci0000:80")
                               .numa_node(i == 3 ? -1 : static_cast<int>(i / 4))
                               .memory_total_bytes(std::uint64_t{96} << 30)
                               .healthy(i != 5)
                               .linked_devices(links));
  }
  // The virtual functions carry no name, UUID or model of their own.
  for (unsigned vf = 8; vf < 10; ++vf)
    view.devices.push_back(card(vf).name("").uuid("").model("").virtual_function());
  // The watcher orders by index; desired_slice must not rely on it.
  std::swap(view.devices[1], view.devices[6]);
  return view;
}

const AttributeValue& attribute(const SliceDevice& device, std::string_view name) {
  return device.attributes.at(std::string(name));
}

TEST(DesiredSlice, ListsThePhysicalCardsWithTheirAttributes) {
  std::vector<std::string> omitted;
  ResourceSliceSpec spec = desired_slice(eight_cards(), "node-a", 7, &omitted);
  // The two virtual functions name no PF (and card 0's SR-IOV is off): said, and not offered.
  EXPECT_THAT(omitted, ::testing::ElementsAre(::testing::HasSubstr("xpu-8: a virtual function"),
                                              ::testing::HasSubstr("xpu-9: a virtual function")));
  EXPECT_EQ(spec.driver, "xpu.kunlunxin.com");
  EXPECT_EQ(spec.node_name, "node-a");
  EXPECT_EQ(spec.pool, (SlicePool{.name = "node-a", .generation = 7, .resource_slice_count = 1}));
  ASSERT_EQ(spec.devices.size(), 8u);
  for (unsigned i = 0; i < 8; ++i) {
    const SliceDevice& device = spec.devices[i];
    EXPECT_EQ(device.name, "xpu-" + std::to_string(i));
    EXPECT_EQ(attribute(device, "index"), AttributeValue(std::int64_t{i}));
    EXPECT_EQ(attribute(device, "model"), AttributeValue(std::string("P800")));
    EXPECT_EQ(attribute(device, "uuid"), AttributeValue("XPU-UUID-" + std::to_string(i)));
    EXPECT_EQ(attribute(device, "pciBusId"),
              AttributeValue("0000:0" + std::to_string(i) + ":00.0"));
    EXPECT_EQ(attribute(device, "driverVersion"), AttributeValue(Version{"5.0.21"}));
    EXPECT_EQ(attribute(device, "healthy"), AttributeValue(i != 5));
    EXPECT_EQ(attribute(device, "linkGroup"), AttributeValue(std::int64_t{i < 4 ? 0 : 4}));
    EXPECT_EQ(device.capacity.at("memory"), std::int64_t{96} << 30);
  }
  EXPECT_EQ(attribute(spec.devices[0], "numaNode"), AttributeValue(std::int64_t{0}));
  EXPECT_EQ(attribute(spec.devices[4], "numaNode"), AttributeValue(std::int64_t{1}));
  EXPECT_FALSE(spec.devices[3].attributes.contains("numaNode"));
}

// resource.kubernetes.io/{pciBusID,pcieRoot,numaNode}, fully qualified, beside the driver's own.
TEST(DesiredSlice, CarriesKubernetesStandardAttributes) {
  std::vector<std::string> omitted;
  ResourceSliceSpec spec = desired_slice(eight_cards(), "node-a", 7, &omitted);
  // The two virtual functions name no PF (and card 0's SR-IOV is off): said, and not offered.
  EXPECT_THAT(omitted, ::testing::ElementsAre(::testing::HasSubstr("xpu-8: a virtual function"),
                                              ::testing::HasSubstr("xpu-9: a virtual function")));
  ASSERT_EQ(spec.devices.size(), 8u);
  for (unsigned i = 0; i < 8; ++i) {
    const SliceDevice& device = spec.devices[i];
    EXPECT_EQ(attribute(device, "resource.kubernetes.io/pciBusID"),
              AttributeValue("0000:0" + std::to_string(i) + ":00.0"));
    EXPECT_EQ(attribute(device, "resource.kubernetes.io/pcieRoot"),
              AttributeValue(std::string(i < 4 ? "pci0000:00" : "pci0000:80")));
    EXPECT_EQ(attribute(device, "pciBusId"), attribute(device, "resource.kubernetes.io/pciBusID"));
    EXPECT_LE(device.attributes.size() + device.capacity.size(),
              kMaxAttributesAndCapacitiesPerDevice);
  }
  EXPECT_EQ(attribute(spec.devices[0], "resource.kubernetes.io/numaNode"),
            AttributeValue(std::int64_t{0}));
  EXPECT_EQ(attribute(spec.devices[4], "resource.kubernetes.io/numaNode"),
            AttributeValue(std::int64_t{1}));
  // -1, no NUMA affinity: the package says not to publish it, and says nothing.
  EXPECT_FALSE(spec.devices[3].attributes.contains("resource.kubernetes.io/numaNode"));

  // Written as given: the key is the whole qualified name, and it reads back equal.
  ResourceSlice slice;
  slice.spec = spec;
  const std::string json = resource_slice_to_json(slice);
  EXPECT_NE(json.find(R"("resource.kubernetes.io/pcieRoot":{"string":"pci0000:80"})"),
            std::string::npos)
      << json;
  auto parsed = parse_resource_slice(json);
  ASSERT_TRUE(parsed) << parsed.error();
  EXPECT_EQ(parsed->spec, spec);
}

TEST(DesiredSlice, LeavesOutStandardAttributesKubernetesWouldRefuseAndSaysWhy) {
  xpu::DeviceView view = xpu::test::present({
      card(0).pci_bus_id("0000:3B:00.0").pcie_root("pci0000:3a").numa_node(0),  // upper case
      card(1).pci_bus_id("3b:00.0").pcie_root("platform").numa_node(1024),
      card(2).pci_bus_id("0000:3b:00.0\n\x1b[2J").pcie_root("pci10000:00"),
      card(3),  // nothing known: nothing published, nothing said
  });
  std::vector<std::string> omitted;
  ResourceSliceSpec spec = desired_slice(view, "node-a", 1, &omitted);
  ASSERT_EQ(spec.devices.size(), 4u);
  for (const SliceDevice& device : spec.devices)
    EXPECT_FALSE(device.attributes.contains("resource.kubernetes.io/pciBusID")) << device.name;
  // The driver's own attribute keeps xpud's word, as before.
  EXPECT_EQ(attribute(spec.devices[0], "pciBusId"), AttributeValue(std::string("0000:3B:00.0")));
  EXPECT_EQ(attribute(spec.devices[0], "resource.kubernetes.io/pcieRoot"),
            AttributeValue(std::string("pci0000:3a")));
  EXPECT_EQ(attribute(spec.devices[0], "resource.kubernetes.io/numaNode"),
            AttributeValue(std::int64_t{0}));
  for (unsigned i = 1; i < 4; ++i) {
    EXPECT_FALSE(spec.devices[i].attributes.contains("resource.kubernetes.io/pcieRoot")) << i;
    EXPECT_FALSE(spec.devices[i].attributes.contains("resource.kubernetes.io/numaNode")) << i;
  }
  EXPECT_EQ(attribute(spec.devices[1], "numaNode"), AttributeValue(std::int64_t{1024}));

  ASSERT_EQ(omitted.size(), 6u) << ::testing::PrintToString(omitted);
  EXPECT_EQ(omitted[0],
            "xpu-0: PciBusId \"0000:3B:00.0\" is not an extended BDF (dddd:bb:dd.f, lower-case "
            "hex): resource.kubernetes.io/pciBusID left out");
  EXPECT_EQ(omitted[2],
            "xpu-1: PcieRoot \"platform\" is not pciDDDD:BB: "
            "resource.kubernetes.io/pcieRoot left out");
  EXPECT_EQ(omitted[3],
            "xpu-1: NUMA node 1024 above 1023: resource.kubernetes.io/numaNode left out");
  // Control bytes from xpud are escaped, never written into the log line as they are.
  EXPECT_NE(omitted[4].find(R"(0000:3b:00.0\x0a\x1b[2J)"), std::string::npos) << omitted[4];
  EXPECT_NE(omitted[5].find("xpu-2: PcieRoot \"pci10000:00\""), std::string::npos) << omitted[5];
}

// A PF whose SR-IOV virtual functions are on has no compute of its own: xpud lists it, no
// slice offers it, and the cards linked to it group without it.
TEST(DesiredSlice, LeavesOutAPhysicalFunctionWithSriovOn) {
  xpu::DeviceView view = eight_cards();
  for (auto& device : view.devices)
    if (device.index == 0) device.sriov_enabled = true;
  ResourceSliceSpec spec = desired_slice(view, "node-a", 2);
  ASSERT_EQ(spec.devices.size(), 7u);
  EXPECT_EQ(spec.devices[0].name, "xpu-1");
  EXPECT_EQ(attribute(spec.devices[0], "linkGroup"), AttributeValue(std::int64_t{1}));
  EXPECT_EQ(attribute(spec.devices[3], "linkGroup"), AttributeValue(std::int64_t{4}));
}

TEST(DesiredSlice, LeavesOutAVersionItCannotNormalise) {
  std::vector<std::string> omitted;
  ResourceSliceSpec spec = desired_slice(eight_cards("unknown"), "node-a", 1, &omitted);
  ASSERT_EQ(omitted.size(), 3u);  // and the two VFs of no PF
  EXPECT_NE(omitted[0].find("driverVersion \"unknown\""), std::string::npos);
  EXPECT_FALSE(spec.devices[0].attributes.contains("driverVersion"));
}

TEST(DesiredSlice, NoCardsGiveNoDevices) {
  xpu::DeviceView view;
  ResourceSliceSpec spec = desired_slice(view, "node-a", 1);
  EXPECT_TRUE(spec.devices.empty());
  EXPECT_EQ(spec.pool.name, "node-a");
}

TEST(DesiredSlices, WithoutSharesThePoolIsTheOneDevicesSlice) {
  std::vector<ResourceSliceSpec> slices =
      desired_slices(eight_cards(), "node-a", 3, nullptr, {}, SharePolicy{});
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices.front(), desired_slice(eight_cards(), "node-a", 3));
  for (const SliceDevice& device : slices.front().devices) {
    EXPECT_FALSE(device.allow_multiple_allocations);
    EXPECT_TRUE(device.consumes_counters.empty());
  }
}

TEST(DesiredSlices, SharesAreASecondDeviceConsumingTheSameCountersAsTheWholeCard) {
  const SharePolicy shares{
      .enabled = true, .minimum = 2 * kGiB, .step = kGiB, .default_memory = 4 * kGiB};
  std::vector<std::string> omitted;
  std::vector<ResourceSliceSpec> slices =
      desired_slices(eight_cards(), "node-a", 3, &omitted, {}, shares);
  // The two virtual functions name no PF (and card 0's SR-IOV is off): not offered.
  EXPECT_THAT(omitted, ::testing::ElementsAre(::testing::HasSubstr("xpu-8: a virtual function"),
                                              ::testing::HasSubstr("xpu-9: a virtual function")));
  ASSERT_EQ(slices.size(), 2u);
  for (const ResourceSliceSpec& slice : slices)
    EXPECT_EQ(slice.pool,
              (SlicePool{.name = "node-a", .generation = 3, .resource_slice_count = 2}));

  const ResourceSliceSpec& devices = slices[0];
  EXPECT_TRUE(devices.shared_counters.empty());
  ASSERT_EQ(devices.devices.size(), 16u);
  const std::int64_t card_memory = std::int64_t{96} << 30;
  for (unsigned i = 0; i < 8; ++i) {
    const SliceDevice& whole = devices.devices[i];
    const SliceDevice& shared = devices.devices[8 + i];
    const std::vector<CounterConsumption> all_of_the_card = {
        {.counter_set = "xpu-" + std::to_string(i), .counters = {{"memory", card_memory}}}};
    EXPECT_EQ(whole.name, "xpu-" + std::to_string(i));
    EXPECT_FALSE(whole.allow_multiple_allocations);
    EXPECT_TRUE(whole.request_policies.empty());
    EXPECT_EQ(whole.consumes_counters, all_of_the_card);

    EXPECT_EQ(shared.name, "xpu-" + std::to_string(i) + "-shared");
    EXPECT_TRUE(shared.allow_multiple_allocations);
    EXPECT_EQ(shared.attributes, whole.attributes);  // the same card, selected the same way
    EXPECT_EQ(shared.taints, whole.taints);          // card 5's taint keeps shares off it too
    EXPECT_EQ(shared.capacity.at("memory"), card_memory);
    EXPECT_EQ(shared.request_policies.at("memory"),
              (CapacityRequestPolicy{
                  .default_value = 4 * kGiB, .min = 2 * kGiB, .max = std::nullopt, .step = kGiB}));
    EXPECT_EQ(shared.consumes_counters, all_of_the_card);
  }
  EXPECT_FALSE(devices.devices[5].taints.empty());

  const ResourceSliceSpec& counters = slices[1];
  EXPECT_TRUE(counters.devices.empty());
  EXPECT_EQ(counters.node_name, "node-a");
  ASSERT_EQ(counters.shared_counters.size(), 8u);
  for (unsigned i = 0; i < 8; ++i)
    EXPECT_EQ(counters.shared_counters[i], (CounterSet{.name = "xpu-" + std::to_string(i),
                                                       .counters = {{"memory", card_memory}}}));
}

TEST(DesiredSlices, ACardBelowTheShareMinimumIsOfferedWholeOnlyAndSaysWhy) {
  xpu::DeviceView view = xpu::test::present(
      {card(0).memory_total_bytes(std::uint64_t{32} << 30), card(1).memory_total_bytes(0)});
  const SharePolicy shares{
      .enabled = true, .minimum = 64 * kGiB, .step = kGiB, .default_memory = 64 * kGiB};
  std::vector<std::string> omitted;
  std::vector<ResourceSliceSpec> slices = desired_slices(view, "node-a", 1, &omitted, {}, shares);
  ASSERT_EQ(slices.size(), 1u);  // no counter set: nothing to keep apart
  ASSERT_EQ(slices[0].devices.size(), 2u);
  EXPECT_TRUE(slices[0].devices[0].consumes_counters.empty());
  ASSERT_EQ(omitted.size(), 2u);
  EXPECT_NE(omitted[0].find("xpu-0: memory 34359738368 bytes, below the share minimum"),
            std::string::npos)
      << omitted[0];
  EXPECT_NE(omitted[1].find("xpu-1: memory unknown"), std::string::npos) << omitted[1];
}

TEST(DesiredSlices, CounterSetsGoEightToASlice) {
  std::vector<xpu::DeviceInfo> devices;
  for (unsigned i = 0; i < 17; ++i)
    devices.push_back(card(i).memory_total_bytes(std::uint64_t{32} << 30));
  const SharePolicy shares{.enabled = true};
  std::vector<ResourceSliceSpec> slices =
      desired_slices(xpu::test::present(devices), "node-a", 1, nullptr, {}, shares);
  ASSERT_EQ(slices.size(), 4u);
  EXPECT_EQ(slices[0].devices.size(), 34u);
  EXPECT_EQ(slices[1].shared_counters.size(), 8u);
  EXPECT_EQ(slices[2].shared_counters.size(), 8u);
  ASSERT_EQ(slices[3].shared_counters.size(), 1u);
  EXPECT_EQ(slices[3].shared_counters[0].name, "xpu-16");
  for (const ResourceSliceSpec& slice : slices) EXPECT_EQ(slice.pool.resource_slice_count, 4);
}

TEST(SemanticDriverVersion, Normalises) {
  EXPECT_EQ(semantic_driver_version("5.0.21"), "5.0.21");
  EXPECT_EQ(semantic_driver_version("5.0"), "5.0.0");
  EXPECT_EQ(semantic_driver_version("5"), "5.0.0");
  EXPECT_EQ(semantic_driver_version("v5.1.2"), "5.1.2");
  EXPECT_EQ(semantic_driver_version("05.00.1"), "5.0.1");
  EXPECT_EQ(semantic_driver_version("5.0.21.6"), "5.0.21+6");
  EXPECT_EQ(semantic_driver_version("5.0.21.6.1"), "5.0.21+6.1");
  EXPECT_EQ(semantic_driver_version("5.0.21-rc1"), "5.0.21-rc1");
  EXPECT_EQ(semantic_driver_version("5.0.21-rc.1+build.7"), "5.0.21-rc.1+build.7");
  EXPECT_EQ(semantic_driver_version("5.0.21+g1234"), "5.0.21+g1234");
  for (std::string_view bad : {"", "unknown", "5..1", "5.0.x", "5.0.21-", "5.0.21-rc_1",
                               "5.0.21.6-rc1", "5.0.21+a+b", " 5.0.21", "5.0.21-a..b"})
    EXPECT_FALSE(semantic_driver_version(bad)) << bad;
  EXPECT_FALSE(semantic_driver_version("1.2.3-" + std::string(70, 'a')));
}

TEST(LinkGroups, FirstFullyLinkedGroupWins) {
  auto view = eight_cards();
  auto groups = link_groups(view.devices);
  for (unsigned i = 0; i < 8; ++i) EXPECT_EQ(groups.at(i), i < 4 ? 0u : 4u) << i;
}

TEST(LinkGroups, OneSidedLinksCountAndUnlinkedCardsStandAlone) {
  std::vector<xpu::DeviceInfo> cards(4);
  for (unsigned i = 0; i < 4; ++i) cards[i].index = i;
  cards[1].linked_devices = {0};  // only card 1 reports the link
  cards[3].linked_devices = {0};  // linked to 0 but not to 1: its own group
  auto groups = link_groups(cards);
  EXPECT_EQ(groups.at(0), 0u);
  EXPECT_EQ(groups.at(1), 0u);
  EXPECT_EQ(groups.at(2), 2u);
  EXPECT_EQ(groups.at(3), 3u);
}

TEST(DesiredSlices, VirtualFunctionsConsumeTheirPartOfTheirPhysicalFunctionsCounters) {
  constexpr std::uint64_t kGiBytes = std::uint64_t{1} << 30;
  xpu::DeviceInfo pf = card(0).pci_bus_id("0000:3b:00.0").memory_total_bytes(32 * kGiBytes);
  pf.sriov_enabled = true;
  xpu::DeviceInfo whole = card(1).pci_bus_id("0000:5e:00.0").memory_total_bytes(32 * kGiBytes);
  std::vector<xpu::DeviceInfo> devices = {pf, whole};
  for (unsigned i : {8u, 9u}) {
    xpu::DeviceInfo vf =
        card(i).model("R200-VF").memory_total_bytes(20 * kGiBytes).virtual_function();
    vf.physical_function = "0000:3b:00.0";
    devices.push_back(vf);
  }
  devices.push_back(card(10).virtual_function());  // its PF unknown: left out
  std::vector<std::string> omitted;
  auto slices = desired_slices(xpu::test::present(devices), "node-a", 1, &omitted, {},
                               SharePolicy{.enabled = true});
  ASSERT_EQ(slices.size(), 2u);
  std::vector<std::string> names;
  for (const SliceDevice& device : slices[0].devices) names.push_back(device.name);
  EXPECT_THAT(names, ::testing::ElementsAre("xpu-1", "xpu-8", "xpu-9", "xpu-1-shared"));
  const SliceDevice& vf = slices[0].devices[1];
  EXPECT_EQ(vf.attributes.at("model"), AttributeValue(std::string("R200-VF")));
  EXPECT_EQ(vf.attributes.at("physicalFunction"), AttributeValue(std::string("0000:3b:00.0")));
  EXPECT_FALSE(slices[0].devices[0].attributes.contains("physicalFunction"));
  EXPECT_EQ(vf.capacity.at("memory"), std::int64_t{20} << 30);
  EXPECT_FALSE(vf.allow_multiple_allocations);
  EXPECT_EQ(vf.consumes_counters,
            (std::vector<CounterConsumption>{
                {.counter_set = "xpu-0", .counters = {{"memory", std::int64_t{20} << 30}}}}));
  // The PF's set holds both VFs (40 GiB, more than the PF's own 32): they fit together.
  EXPECT_EQ(slices[1].shared_counters,
            (std::vector<CounterSet>{
                {.name = "xpu-0", .counters = {{"memory", std::int64_t{40} << 30}}},
                {.name = "xpu-1", .counters = {{"memory", std::int64_t{32} << 30}}}}));
  ASSERT_EQ(omitted.size(), 1u);
  EXPECT_THAT(omitted[0],
              ::testing::HasSubstr("xpu-10: a virtual function whose physical function"));

  // Without shares the VFs are offered just the same, and only their PF has a counter set: the
  // whole card consumes none.
  auto plain = desired_slices(xpu::test::present(devices), "node-a", 1, nullptr, {}, SharePolicy{});
  ASSERT_EQ(plain.size(), 2u);
  names.clear();
  for (const SliceDevice& device : plain[0].devices) names.push_back(device.name);
  EXPECT_THAT(names, ::testing::ElementsAre("xpu-1", "xpu-8", "xpu-9"));
  EXPECT_TRUE(plain[0].devices[0].consumes_counters.empty());
  EXPECT_EQ(plain[0].devices[2].consumes_counters, vf.consumes_counters);
  EXPECT_EQ(plain[1].shared_counters,
            (std::vector<CounterSet>{
                {.name = "xpu-0", .counters = {{"memory", std::int64_t{40} << 30}}}}));
  EXPECT_EQ(plain[1].pool.resource_slice_count, 2);
}

// 40 cards with shares are 80 devices: over the API's 64 a slice, so two devices slices, then
// five of eight counter sets each; every slice counts all seven.
TEST(DesiredSlices, APoolOfMoreDevicesThanASliceTakesIsCutInto64s) {
  std::vector<xpu::DeviceInfo> devices;
  for (unsigned i = 0; i < 40; ++i)
    devices.push_back(card(i).memory_total_bytes(std::uint64_t{32} << 30));
  auto pool = desired_slices(xpu::test::present(devices), "node-a", 1, nullptr, {},
                             SharePolicy{.enabled = true});
  ASSERT_EQ(pool.size(), 7u);
  EXPECT_EQ(pool[0].devices.size(), 64u);
  EXPECT_EQ(pool[1].devices.size(), 16u);
  EXPECT_EQ(pool[0].devices[0].name, "xpu-0");
  EXPECT_EQ(pool[0].devices[40].name, "xpu-0-shared");
  EXPECT_EQ(pool[1].devices[15].name, "xpu-39-shared");
  for (std::size_t i = 2; i < pool.size(); ++i) {
    EXPECT_TRUE(pool[i].devices.empty());
    EXPECT_EQ(pool[i].shared_counters.size(), 8u);
  }
  for (const ResourceSliceSpec& slice : pool) EXPECT_EQ(slice.pool.resource_slice_count, 7);
  // Without counters the shares go, and the slice that held only shares with them.
  auto stripped = without_counters(pool);
  ASSERT_EQ(stripped.size(), 1u);
  EXPECT_EQ(stripped[0].devices.size(), 40u);
  EXPECT_EQ(stripped[0].pool.resource_slice_count, 1);
}

// What an API server without partitionable devices (Kubernetes 1.35) can hold: no counters and
// no shares, the cards and the VFs still offered, in one slice that says it is the only one.
TEST(DesiredSlices, WithoutCountersTheSharesAndCounterSlicesGoAndTheVirtualFunctionsStay) {
  constexpr std::uint64_t kGiBytes = std::uint64_t{1} << 30;
  xpu::DeviceInfo pf = card(0).pci_bus_id("0000:3b:00.0").memory_total_bytes(32 * kGiBytes);
  pf.sriov_enabled = true;
  std::vector<xpu::DeviceInfo> devices = {pf, card(1).memory_total_bytes(32 * kGiBytes)};
  xpu::DeviceInfo vf = card(8).memory_total_bytes(16 * kGiBytes).virtual_function();
  vf.physical_function = "0000:3b:00.0";
  devices.push_back(vf);
  auto pool = desired_slices(xpu::test::present(devices), "node-a", 4, nullptr, {},
                             SharePolicy{.enabled = true});
  ASSERT_EQ(pool.size(), 2u);
  auto stripped = without_counters(pool);
  ASSERT_EQ(stripped.size(), 1u);
  EXPECT_EQ(stripped[0].pool,
            (SlicePool{.name = "node-a", .generation = 4, .resource_slice_count = 1}));
  std::vector<std::string> names;
  for (const SliceDevice& device : stripped[0].devices) {
    names.push_back(device.name);
    EXPECT_TRUE(device.consumes_counters.empty()) << device.name;
  }
  EXPECT_THAT(names, ::testing::ElementsAre("xpu-1", "xpu-8"));
  EXPECT_TRUE(stripped[0].shared_counters.empty());
  // A pool that had no counters is as it was; a node without cards keeps its empty slice.
  auto plain = desired_slices(eight_cards(), "node-a", 2, nullptr, {}, SharePolicy{});
  EXPECT_EQ(without_counters(plain), plain);
  auto empty = without_counters(desired_slices(xpu::DeviceView{}, "node-a", 2, nullptr, {}, {}));
  ASSERT_EQ(empty.size(), 1u);
  EXPECT_TRUE(empty[0].devices.empty());
}

// Card 2 bound to vfio-pci, and a VF of another card there too; xpud still lists card 2 as a card
// (its discovery not yet run after the bind).
xpu::DeviceView with_vfio_functions() {
  xpu::DeviceView view = eight_cards();
  view.vfio_functions = {xpu::test::on_vfio("0000:5e:00.1", "41", true),
                         xpu::test::on_vfio("0000:02:00.0", "7")};
  view.vfio_functions[0].numa_node = -1;
  return view;
}

TEST(DesiredSlice, FunctionsOnVfioAreDevicesOfTheirOwnKindAndLeaveTheComputePool) {
  std::vector<std::string> omitted;
  ResourceSliceSpec spec = desired_slice(with_vfio_functions(), "node-a", 4, &omitted);
  std::vector<std::string> names;
  for (const SliceDevice& device : spec.devices) names.push_back(device.name);
  // Card 2 (0000:02:00.0) is not offered as a card; both functions are, sorted by address.
  EXPECT_THAT(names, ::testing::ElementsAre("xpu-0", "xpu-1", "xpu-3", "xpu-4", "xpu-5", "xpu-6",
                                            "xpu-7", "vfio-0000-02-00-0", "vfio-0000-5e-00-1"));
  // Only the functions on vfio-pci carry the attribute the VFIO class selects on.
  for (std::size_t i = 0; i < 7; ++i) EXPECT_FALSE(spec.devices[i].attributes.contains("vfio"));

  const SliceDevice& card = spec.devices[7];
  EXPECT_EQ(card.attributes, (std::map<std::string, AttributeValue>{
                                 {"vfio", true},
                                 {"pciBusId", std::string("0000:02:00.0")},
                                 {"iommuGroup", std::int64_t{7}},
                                 {"virtualFunction", false},
                                 {"model", std::string("R200")},
                                 {"pciId", std::string("1d22:3684")},
                                 {"numaNode", std::int64_t{1}},
                                 {"resource.kubernetes.io/pciBusID", std::string("0000:02:00.0")},
                                 {"resource.kubernetes.io/numaNode", std::int64_t{1}},
                             }));
  EXPECT_TRUE(card.capacity.empty());
  EXPECT_TRUE(card.taints.empty());
  EXPECT_TRUE(card.consumes_counters.empty());

  const SliceDevice& vf = spec.devices[8];
  EXPECT_EQ(attribute(vf, "virtualFunction"), AttributeValue(true));
  EXPECT_EQ(attribute(vf, "vfioPhysicalFunction"), AttributeValue(std::string("0000:3b:00.0")));
  EXPECT_EQ(attribute(vf, "iommuGroup"), AttributeValue(std::int64_t{41}));
  // Not the compute VFs' attribute: the vxpu class must not select it.
  EXPECT_FALSE(vf.attributes.contains("physicalFunction"));
  EXPECT_FALSE(vf.attributes.contains("numaNode"));
}

TEST(DesiredSlice, AFunctionOnVfioXpudShouldNeverSendIsLeftOutAndSaid) {
  xpu::DeviceView view = with_vfio_functions();
  view.vfio_functions[0].iommu_group = "../../etc";
  view.vfio_functions[1].pci_bus_id = "0000:02:00.0\n";
  std::vector<std::string> omitted;
  ResourceSliceSpec spec = desired_slice(view, "node-a", 4, &omitted);
  for (const SliceDevice& device : spec.devices) EXPECT_FALSE(device.name.starts_with("vfio-"));
  // Card 2 is a card again: xpud lists no function on vfio-pci at its address.
  EXPECT_EQ(spec.devices.size(), 8u);
  EXPECT_THAT(omitted, ::testing::Contains(::testing::HasSubstr(
                           "function \"0000:5e:00.1\" on vfio-pci, IOMMU group \"../../etc\"")));
  // Escaped: xpud's word goes into the driver's log.
  EXPECT_THAT(omitted, ::testing::Contains(::testing::HasSubstr(
                           "function \"0000:02:00.0\\x0a\" on vfio-pci, IOMMU group \"7\"")));
}

TEST(DesiredSlices, FunctionsOnVfioStayWhereCountersAreDropped) {
  std::vector<ResourceSliceSpec> slices = without_counters(
      desired_slices(with_vfio_functions(), "node-a", 1, nullptr, {}, SharePolicy{}));
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0].devices.back().name, "vfio-0000-5e-00-1");
}

}  // namespace
}  // namespace shim::dra
