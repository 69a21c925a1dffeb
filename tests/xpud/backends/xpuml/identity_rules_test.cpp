// The xpuml backend's identity rules (identity_rules.h) on plain answers, no library needed.
#include "xpud/backends/xpuml/identity_rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace xpud::xpuml {
namespace {

using ::testing::HasSubstr;

Answer<int> id_answer(int id) {
  Answer<int> answer;
  answer.available = true;
  answer.value = id;
  return answer;
}

Answer<int> failed_id(std::string message) {
  Answer<int> answer;
  answer.available = true;
  answer.failure = std::move(message);
  return answer;
}

NamingInputs naming(unsigned library_index, Answer<int> id, std::vector<unsigned> nodes,
                    unsigned chip = 0) {
  NamingInputs in;
  in.subject = "index " + std::to_string(library_index) + " (0000:3b:00.0)";
  in.library_index = library_index;
  in.physical_id = std::move(id);
  in.class_nodes = std::move(nodes);
  in.chip = chip;
  return in;
}

// ---- naming ----

TEST(IdentityRulesNaming, ThePhysicalIdWinsOverSysfsAndTheLibraryOrder) {
  auto name = choose_name(naming(0, id_answer(3), {6}));
  EXPECT_EQ(name.index, 3u);
  EXPECT_EQ(name.source, NameSource::PhysicalId);
  EXPECT_FALSE(name.warning);
  ASSERT_TRUE(name.differs_from_library_order);
  EXPECT_THAT(*name.differs_from_library_order, HasSubstr("index 0 (0000:3b:00.0) is xpu3"));
  EXPECT_THAT(*name.differs_from_library_order, HasSubstr("where it is 0"));
  EXPECT_THAT(*name.differs_from_library_order, HasSubstr("CXPU_VISIBLE_DEVICES"));
}

TEST(IdentityRulesNaming, SameIdAsTheLibraryPositionIsNotWorthANote) {
  auto name = choose_name(naming(2, id_answer(2), {}));
  EXPECT_EQ(name.index, 2u);
  EXPECT_FALSE(name.differs_from_library_order);
}

TEST(IdentityRulesNaming, WithoutGetIdTheClassLinkNamesTheCardQuietly) {
  auto name = choose_name(naming(0, Answer<int>{}, {4}));
  EXPECT_EQ(name.index, 4u);
  EXPECT_EQ(name.source, NameSource::ClassLink);
  EXPECT_FALSE(name.warning);  // an older library: sysfs is exact
}

TEST(IdentityRulesNaming, AFailedGetIdFallsBackOnTheClassLinkWithAWarning) {
  auto name = choose_name(naming(1, failed_id("xpumlDeviceGetId(index 1): UNKNOWN (999)"), {7}));
  EXPECT_EQ(name.index, 7u);
  EXPECT_EQ(name.source, NameSource::ClassLink);
  ASSERT_TRUE(name.warning);
  EXPECT_THAT(*name.warning, HasSubstr("UNKNOWN (999)"));
  EXPECT_THAT(*name.warning, HasSubstr("xpu7"));
}

TEST(IdentityRulesNaming, ImplausibleIdsAreNotNames) {
  for (int id : {-1, 10000, 65535}) {
    auto name = choose_name(naming(1, id_answer(id), {5}));
    EXPECT_EQ(name.index, 5u) << id;
    ASSERT_TRUE(name.warning) << id;
    EXPECT_THAT(*name.warning, HasSubstr("implausible physical id " + std::to_string(id)));
  }
}

TEST(IdentityRulesNaming, BothChipsOfAK200TakeTheirNodesInOrder) {
  EXPECT_EQ(choose_name(naming(4, Answer<int>{}, {2, 3}, 0)).index, 2u);
  EXPECT_EQ(choose_name(naming(5, Answer<int>{}, {2, 3}, 1)).index, 3u);
}

TEST(IdentityRulesNaming, LastTheLibraryIndexWithOneWarning) {
  auto name = choose_name(naming(3, Answer<int>{}, {}));
  EXPECT_EQ(name.index, 3u);
  EXPECT_EQ(name.source, NameSource::LibraryIndex);
  ASSERT_TRUE(name.warning);
  EXPECT_THAT(*name.warning, HasSubstr("no physical id and no xpu class device"));
  EXPECT_THAT(*name.warning, HasSubstr("index 3 (0000:3b:00.0)"));
  // A K200's second chip when sysfs lists only one node: the library index, warned about.
  auto second = choose_name(naming(6, Answer<int>{}, {2}, 1));
  EXPECT_EQ(second.index, 6u);
  EXPECT_TRUE(second.warning);
}

// ---- model ----

pci::PciModel pci_model(std::string model, bool vf = false) {
  return pci::PciModel{std::move(model), vf};
}

TEST(IdentityRulesModel, BoardIdFirstThenModelIdThenPciIdsThenName) {
  EXPECT_EQ(choose_model({pci_model("R200"), 101, 2, "name"}), "R300");
  EXPECT_EQ(choose_model({pci_model("R200"), 999, 3, "name"}), "R300");
  EXPECT_EQ(choose_model({pci_model("R200"), 999, 9999, "name"}), "R200");
  EXPECT_EQ(choose_model({std::nullopt, std::nullopt, std::nullopt, "XPU-name"}), "XPU-name");
  EXPECT_EQ(choose_model({}), "unknown");
}

TEST(IdentityRulesModel, ModelIdZeroIsAK200NotUnset) {
  EXPECT_EQ(choose_model({std::nullopt, 999, 0, std::nullopt}), "K200");
  EXPECT_EQ(model_from_model_id(0), "K200");
  EXPECT_EQ(model_from_model_id(1), "K100");
  EXPECT_EQ(model_from_model_id(4), "R200-8F");
  EXPECT_EQ(model_from_model_id(9999), std::nullopt);
}

TEST(IdentityRulesModel, VirtualFunctionsAreNamedByTheirModelId) {
  EXPECT_EQ(choose_model({pci_model("KL2-VF", true), 100, 201, std::nullopt}), "R200-VF-16G");
  EXPECT_EQ(choose_model({pci_model("KL2-VF", true), 100, 202, std::nullopt}), "R200-VF-8G");
  EXPECT_EQ(choose_model({pci_model("KL2-VF", true), 100, 203, std::nullopt}), "R200-VF-5G");
  // Without a VF model id, the PCI ids' name, not the board's.
  EXPECT_EQ(choose_model({pci_model("KL2-VF", true), 100, 9999, std::nullopt}), "KL2-VF");
}

TEST(IdentityRulesModel, APfWithVirtualFunctionsKeepsItsBoardName) {
  EXPECT_EQ(choose_model({pci_model("R200"), 100, 200, std::nullopt}), "R200");
}

// ---- SR-IOV role ----

TEST(IdentityRulesSriov, SriovOnMarksAPhysicalFunctionWithVfsNotAVf) {
  auto role = choose_sriov_role({pci_model("R200"), 200, XPUML_HOST_VXPU_SRIOV_ON});
  EXPECT_FALSE(role.is_virtual_function);
  EXPECT_TRUE(role.sriov_enabled);
  // Unknown PCI ids do not change that.
  role = choose_sriov_role({std::nullopt, std::nullopt, XPUML_HOST_VXPU_SRIOV_ON});
  EXPECT_FALSE(role.is_virtual_function);
  EXPECT_TRUE(role.sriov_enabled);
  role = choose_sriov_role({std::nullopt, 200, std::nullopt});
  EXPECT_TRUE(role.sriov_enabled);
}

TEST(IdentityRulesSriov, VirtualFunctionsByPciIdOrModelId) {
  auto role = choose_sriov_role({pci_model("KL2-VF", true), std::nullopt, std::nullopt});
  EXPECT_TRUE(role.is_virtual_function);
  EXPECT_FALSE(role.sriov_enabled);
  role = choose_sriov_role({std::nullopt, 202, XPUML_HOST_VXPU_SRIOV_ON});
  EXPECT_TRUE(role.is_virtual_function);
  EXPECT_FALSE(role.sriov_enabled);
}

TEST(IdentityRulesSriov, OrdinaryCards) {
  for (int mode : {XPUML_HOST_VXPU_NON_SRIOV, XPUML_HOST_VXPU_SRIOV_OFF}) {
    auto role = choose_sriov_role({pci_model("R200"), 2, mode});
    EXPECT_FALSE(role.is_virtual_function);
    EXPECT_FALSE(role.sriov_enabled);
  }
}

TEST(IdentityRulesSriov, MaxVfCountNotAvailableIsNoSriovNotALimit) {
  EXPECT_EQ(virtual_function_limit(XPUML_VALUE_NOT_AVAILABLE_UNSIGNED), std::nullopt);
  EXPECT_EQ(virtual_function_limit(4294967295u), std::nullopt);
  EXPECT_EQ(virtual_function_limit(0), std::nullopt);
  EXPECT_EQ(virtual_function_limit(3), 3u);
}

// ---- memory ----

TEST(IdentityRulesMemory, MemoryInfoFirstThenAttributes) {
  xpumlMemory_t memory{};
  memory.totalGlobalMemory = std::uint64_t{16} << 30;
  xpumlDeviceAttributes_t attributes{};
  attributes.globalMemorySizeMB = 32768;
  EXPECT_EQ(choose_memory_total(memory, attributes), std::uint64_t{16} << 30);
  EXPECT_EQ(choose_memory_total(std::nullopt, attributes), std::uint64_t{32} << 30);
  memory.totalGlobalMemory = 0;
  EXPECT_EQ(choose_memory_total(memory, attributes), std::uint64_t{32} << 30);
  attributes.globalMemorySizeMB = ~std::uint64_t{0};
  EXPECT_EQ(choose_memory_total(memory, attributes), std::nullopt);
  EXPECT_EQ(choose_memory_total(std::nullopt, std::nullopt), std::nullopt);
}

// ---- UUID ----

TEST(IdentityRulesUuid, TheLibrarysUsableUuidElseDerivedWithAWarning) {
  Answer<std::string> none;
  auto decision = choose_uuid(none, "index 0");
  EXPECT_TRUE(decision.uuid.empty());
  EXPECT_FALSE(decision.warning);  // no real library exports the call: nothing to warn about

  Answer<std::string> good;
  good.available = true;
  good.value = "4f1c2b3a-1111-4222-8333-444455556666";
  EXPECT_EQ(choose_uuid(good, "index 0").uuid, *good.value);

  Answer<std::string> bad = good;
  bad.value = "has spaces";
  decision = choose_uuid(bad, "index 0");
  EXPECT_TRUE(decision.uuid.empty());
  ASSERT_TRUE(decision.warning);
  EXPECT_THAT(*decision.warning, HasSubstr("xpumlDeviceGetUUID(index 0): unusable UUID"));

  Answer<std::string> failed;
  failed.available = true;
  failed.failure = "xpumlDeviceGetUUID(index 0): UNKNOWN (999)";
  decision = choose_uuid(failed, "index 0");
  EXPECT_TRUE(decision.uuid.empty());
  ASSERT_TRUE(decision.warning);
  EXPECT_THAT(*decision.warning, HasSubstr("UNKNOWN (999); deriving a UUID"));
}

// ---- NUMA ----

TEST(IdentityRulesNuma, AbsentIsUnknownQuietlyUnusableWithAWarning) {
  EXPECT_EQ(choose_numa_node(std::optional<int>(1), "0000:3b:00.0").node, 1);
  auto absent = choose_numa_node(std::optional<int>(), "0000:3b:00.0");
  EXPECT_EQ(absent.node, -1);
  EXPECT_FALSE(absent.warning);
  auto bad = choose_numa_node(xpu::Error{"numa_node: malformed content"}, "0000:3b:00.0");
  EXPECT_EQ(bad.node, -1);
  ASSERT_TRUE(bad.warning);
  EXPECT_THAT(*bad.warning, HasSubstr("0000:3b:00.0: numa_node: malformed content"));
}

}  // namespace
}  // namespace xpud::xpuml
