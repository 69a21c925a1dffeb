// The backend's pure parts: NUMA node files, derived UUIDs, library text, device states.
#include <regex>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/xpud/backends/xpuml/fake_xpuml_host.h"
#include "xpud/backends/xpuml/derived_uuid.h"
#include "xpud/backends/xpuml/numa_node_file.h"
#include "xpud/backends/xpuml/xpuml_library.h"
#include "xpud/backends/xpuml/xpuml_metrics.h"

namespace xpud::xpuml {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr const char* kBus = "0000:3b:00.0";

class NumaNodeFileTest : public ::testing::Test {
 protected:
  test::FakeXpumlHost host;
};

TEST_F(NumaNodeFileTest, ReadsTheNode) {
  host.write_numa_node(kBus, "1\n");
  EXPECT_EQ(read_numa_node(host.sysfs_root(), kBus).value(), 1);
  host.write_numa_node(kBus, "0");
  EXPECT_EQ(read_numa_node(host.sysfs_root(), kBus).value(), 0);
  host.write_numa_node(kBus, "-1\n");
  EXPECT_EQ(read_numa_node(host.sysfs_root(), kBus).value(), -1);
}

TEST_F(NumaNodeFileTest, AbsentFileMeansUnknown) {
  EXPECT_EQ(read_numa_node(host.sysfs_root(), kBus).value(), -1);
}

TEST_F(NumaNodeFileTest, MalformedContentsAreErrorsNamingTheFile) {
  const std::string file =
      (host.sysfs_root() / "sys/bus/pci/devices" / kBus / "numa_node").string();
  for (std::string_view contents :
       {"", "\n", "abc\n", "1x\n", "1 2\n", "-2\n", "1024\n", "99999999999999\n", "0x1\n",
        "\x01\x02\n", "1\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n"}) {
    host.write_numa_node(kBus, contents);
    auto node = read_numa_node(host.sysfs_root(), kBus);
    ASSERT_FALSE(node.ok()) << "contents: " << contents;
    EXPECT_THAT(node.error(), HasSubstr(file));
  }
}

TEST_F(NumaNodeFileTest, DirectoryInPlaceOfTheFileIsAnError) {
  std::filesystem::create_directories(host.sysfs_root() / "sys/bus/pci/devices" / kBus /
                                      "numa_node");
  auto node = read_numa_node(host.sysfs_root(), kBus);
  ASSERT_FALSE(node.ok());
  EXPECT_THAT(node.error(), HasSubstr("not a regular file"));
}

TEST(DerivedUuid, IsStableUuidFormattedAndDistinct) {
  const std::regex format("^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string uuid = derive_uuid("serial:02K00FAKE" + std::to_string(i));
    EXPECT_TRUE(std::regex_match(uuid, format)) << uuid;
    EXPECT_TRUE(seen.insert(uuid).second) << uuid;
    EXPECT_LE(uuid.size(), kMaxUuidLength);
  }
  EXPECT_NE(derive_uuid("serial:ABC"), derive_uuid("serial:ABD"));
}

TEST(DerivedUuid, IsPinnedAcrossReleases) {
  // A changed derivation would make Kubernetes see every card as new: these values are fixed.
  EXPECT_EQ(derive_uuid("serial:ABC"), "2f0d4fc9-3f2c-85a2-adc1-b94ee672f974");
  EXPECT_EQ(derive_uuid("pci:0000:3b:00.0"), "d5fbfe8e-9c02-884b-af1a-7e12ba24c5ed");
}

TEST(DerivedUuid, UsableUuidRules) {
  EXPECT_TRUE(is_usable_uuid("fa4e0000-0000-4000-8000-000000000001"));
  EXPECT_TRUE(is_usable_uuid("XPU-1234_abc.5"));
  EXPECT_FALSE(is_usable_uuid(""));
  EXPECT_FALSE(is_usable_uuid(std::string(64, 'a')));
  EXPECT_TRUE(is_usable_uuid(std::string(63, 'a')));
  EXPECT_FALSE(is_usable_uuid("a,b"));
  EXPECT_FALSE(is_usable_uuid("a b"));
  EXPECT_FALSE(is_usable_uuid("a/b"));
}

TEST(TextFromLibrary, StopsAtNulOrBufferEndAndRejectsGarbage) {
  const char terminated[] = "  R200 \0junk";
  EXPECT_EQ(text_from_library(terminated, sizeof terminated), "R200");
  const char unterminated[4] = {'A', 'B', 'C', 'D'};
  EXPECT_EQ(text_from_library(unterminated, sizeof unterminated), "ABCD");
  const char control[] = "AB\x07";
  EXPECT_EQ(text_from_library(control, sizeof control), std::nullopt);
  const char high[] = "AB\xff";
  EXPECT_EQ(text_from_library(high, sizeof high), std::nullopt);
  const char blank[] = "   ";
  EXPECT_EQ(text_from_library(blank, sizeof blank), std::nullopt);
}

TEST(DeviceState, FaultyStatesNameStateAndNumber) {
  EXPECT_EQ(fault_from_state(207), "driver reports state ERROR (207)");
  EXPECT_EQ(fault_from_state(208), "driver reports state IN_EXCEPTION (208)");
  EXPECT_EQ(fault_from_state(205), "driver reports state IN_RESET (205)");
  EXPECT_EQ(fault_from_state(201), std::nullopt);
  EXPECT_EQ(fault_from_state(0), std::nullopt);
}

}  // namespace
}  // namespace xpud::xpuml
