#include "xpud/backends/sysfs/device_numbering.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace xpud::sysfs {
namespace {

PciFunction function(std::string bus_id, std::string model, bool vf = false,
                     std::vector<unsigned> published = {}) {
  PciFunction f;
  f.pci_bus_id = std::move(bus_id);
  f.model = {std::move(model), vf};
  f.published_nodes = std::move(published);
  return f;
}

// "index:bus_id/chip" per slot, in slot order: easy to read when a test fails.
std::vector<std::string> describe(const std::vector<PciFunction>& functions) {
  std::vector<std::string> text;
  for (const auto& slot : assign_device_slots(functions))
    text.push_back(std::to_string(slot.index) + ":" + functions[slot.function].pci_bus_id + "/" +
                   std::to_string(slot.chip));
  return text;
}

using Lines = std::vector<std::string>;

TEST(SysfsDeviceNumbering, NoFunctionsNoSlots) {
  EXPECT_TRUE(describe({}).empty());
}

TEST(SysfsDeviceNumbering, PhysicalFunctionsInBusOrder) {
  EXPECT_EQ(describe({function("0000:3b:00.0", "R200"), function("0000:5e:00.0", "R300"),
                      function("0000:af:00.0", "R200")}),
            (Lines{"0:0000:3b:00.0/0", "1:0000:5e:00.0/0", "2:0000:af:00.0/0"}));
}

TEST(SysfsDeviceNumbering, VirtualFunctionsComeAfterEveryPhysicalFunction) {
  PciFunction vf_by_link = function("0000:3b:00.2", "R200");
  vf_by_link.has_physfn_link = true;
  EXPECT_EQ(
      describe({function("0000:3b:00.0", "R200"), function("0000:3b:00.1", "KL2-VF", true),
                vf_by_link, function("0000:5e:00.0", "R200")}),
      (Lines{"0:0000:3b:00.0/0", "1:0000:5e:00.0/0", "2:0000:3b:00.1/0", "3:0000:3b:00.2/0"}));
}

TEST(SysfsDeviceNumbering, K200BacksTwoConsecutiveNodes) {
  EXPECT_EQ(
      describe({function("0000:3b:00.0", "R200"), function("0000:5e:00.0", "K200"),
                function("0000:af:00.0", "R200")}),
      (Lines{"0:0000:3b:00.0/0", "1:0000:5e:00.0/0", "2:0000:5e:00.0/1", "3:0000:af:00.0/0"}));
}

TEST(SysfsDeviceNumbering, PublishedNodesWinAndTheRestFillTheGaps) {
  // The driver says 3b backs xpu1 and 5e (a K100: one chip, ids of a K200) backs xpu0 only.
  EXPECT_EQ(
      describe({function("0000:3b:00.0", "R200", false, {1}),
                function("0000:5e:00.0", "K200", false, {0}), function("0000:af:00.0", "R200"),
                function("0000:d8:00.0", "R200")}),
      (Lines{"0:0000:5e:00.0/0", "1:0000:3b:00.0/0", "2:0000:af:00.0/0", "3:0000:d8:00.0/0"}));
}

TEST(SysfsDeviceNumbering, PublishedNodesSurviveAHoleLeftByHotUnplug) {
  EXPECT_EQ(describe({function("0000:3b:00.0", "R200", false, {0}),
                      function("0000:af:00.0", "R200", false, {2})}),
            (Lines{"0:0000:3b:00.0/0", "2:0000:af:00.0/0"}));
}

TEST(SysfsDeviceNumbering, ANodeClaimedTwiceGoesToTheFirstFunction) {
  EXPECT_EQ(describe({function("0000:3b:00.0", "R200", false, {0}),
                      function("0000:5e:00.0", "R200", false, {0})}),
            (Lines{"0:0000:3b:00.0/0", "1:0000:5e:00.0/0"}));
}

TEST(SysfsDeviceNumbering, TwoPublishedNodesAreTwoChips) {
  EXPECT_EQ(describe({function("0000:3b:00.0", "K200", false, {4, 5})}),
            (Lines{"4:0000:3b:00.0/0", "5:0000:3b:00.0/1"}));
}

}  // namespace
}  // namespace xpud::sysfs
