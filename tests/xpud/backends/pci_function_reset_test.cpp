// The kernel's reset of a card's PCI function, on fake sysfs trees laid out as
// Documentation/ABI/testing/sysfs-bus-pci describes `reset` and `reset_method`.
#include "xpud/backends/pci_function_reset.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/fakes/sysfs/fake_sysfs_tree.h"

namespace xpud {
namespace {

using xpu::fakes::FakeSysfsTree;
using xpu::fakes::kunlunxin_r_series;
using Kind = DriverChangeError::Kind;

constexpr const char* kBusId = "0000:3b:00.0";

DeviceIdentity card_at(const char* bus_id) {
  DeviceIdentity card;
  card.index = 2;
  card.uuid = "card-2";
  card.pci_bus_id = bus_id;
  return card;
}

TEST(PciFunctionReset, WritesOneToTheFunctionsResetFileWithItsDriverBound) {
  FakeSysfsTree tree;
  tree.add_pci_function(kunlunxin_r_series(kBusId, 1, 0));  // bound to kunlun
  PciFunctionReset reset(tree.root());
  EXPECT_FALSE(reset.reset_card(card_at(kBusId)));
  EXPECT_EQ(tree.reset_written(kBusId), "1");
}

TEST(PciFunctionReset, AFunctionTheKernelCannotResetIsNotSupported) {
  FakeSysfsTree tree;
  auto function = kunlunxin_r_series(kBusId, 1, 0);
  function.reset_methods.reset();  // no reset method: the kernel makes no `reset` file
  tree.add_pci_function(function);
  auto refused = PciFunctionReset(tree.root()).reset_card(card_at(kBusId));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->kind, Kind::NotSupported);
  EXPECT_NE(refused->message.find("xpu2 (0000:3b:00.0): the kernel has no reset for this function"),
            std::string::npos)
      << refused->message;
}

TEST(PciFunctionReset, ResetsTurnedOffInResetMethodAreNotWritten) {
  FakeSysfsTree tree;
  auto function = kunlunxin_r_series(kBusId, 1, 0);
  function.reset_methods = "";
  tree.add_pci_function(function);
  auto refused = PciFunctionReset(tree.root()).reset_card(card_at(kBusId));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->kind, Kind::NotSupported);
  EXPECT_NE(refused->message.find("resets are turned off"), std::string::npos) << refused->message;
  EXPECT_EQ(tree.reset_written(kBusId), "");
}

TEST(PciFunctionReset, AGoneFunctionIsNoSuchDevice) {
  FakeSysfsTree tree;
  tree.add_pci_function(kunlunxin_r_series(kBusId, 1, 0));
  tree.remove_pci_function(kBusId);
  auto refused = PciFunctionReset(tree.root()).reset_card(card_at(kBusId));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->kind, Kind::NoSuchDevice);
}

TEST(PciFunctionReset, AResetFileThatCannotBeWrittenFailsNamingItAndTheReason) {
  FakeSysfsTree tree;
  tree.add_pci_function(kunlunxin_r_series(kBusId, 1, 0));
  // Not what the kernel makes: a directory where the attribute should be.
  std::filesystem::remove(tree.function_dir(kBusId) / "reset");
  std::filesystem::create_directory(tree.function_dir(kBusId) / "reset");
  auto failed = PciFunctionReset(tree.root()).reset_card(card_at(kBusId));
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->kind, Kind::Failed);
  const auto reset = tree.root() / "sys/bus/pci/devices" / kBusId / "reset";
  EXPECT_NE(failed->message.find("cannot open " + reset.string() + ": Is a directory"),
            std::string::npos)
      << failed->message;
}

TEST(PciFunctionReset, ABusIdThatWouldLeaveTheDevicesDirectoryIsRefused) {
  FakeSysfsTree tree;
  for (const char* hostile : {"", "../../../etc", ".", "0000:3b:00.0/../x"}) {
    auto refused = PciFunctionReset(tree.root()).reset_card(card_at(hostile));
    ASSERT_TRUE(refused) << hostile;
    EXPECT_NE(refused->kind, Kind::Failed) << hostile;
  }
}

}  // namespace
}  // namespace xpud
