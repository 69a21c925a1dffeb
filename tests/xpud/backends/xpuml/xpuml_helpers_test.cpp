// The backend's pure parts: derived UUIDs, library text, device states. (NUMA node files are
// read with the reader the sysfs backend uses; its tests are in tests/xpud/backends/.)
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "xpud/backends/xpuml/derived_uuid.h"
#include "xpud/backends/xpuml/xpuml_library.h"
#include "xpud/backends/xpuml/xpuml_metrics.h"

namespace xpud::xpuml {
namespace {

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
