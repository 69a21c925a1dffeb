// The backend's pure parts: library text, device states. (NUMA node files and derived device
// ids are shared with the sysfs backend; their tests are in tests/xpud/backends/.)
#include <gtest/gtest.h>

#include "xpud/backends/xpuml/xpuml_library.h"
#include "xpud/backends/xpuml/xpuml_metrics.h"

namespace xpud::xpuml {
namespace {

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
