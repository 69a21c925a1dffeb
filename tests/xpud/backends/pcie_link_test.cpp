// The PCIe link and AER files as the kernel writes them (drivers/pci/pci-sysfs.c,
// drivers/pci/probe.c's pci_speed_string, drivers/pci/pcie/aer.c's aer_stats_dev_attr, and the
// samples of Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats), and as they must not
// fool xpud when they are something else.
#include "xpud/backends/pcie_link.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/fakes/sysfs/fake_sysfs_tree.h"

namespace xpud::sysfs {
namespace {

using xpu::fakes::FakeAerCounts;
using xpu::fakes::FakePcieLink;
using xpu::fakes::FakeSysfsTree;

TEST(PcieLink, SpeedsAsEveryKernelWritesThem) {
  // From 5.7 on (pci_speed_string), and the older current_link_speed switch.
  EXPECT_EQ(parse_link_speed("2.5 GT/s PCIe\n"), 2500000000u);
  EXPECT_EQ(parse_link_speed("5.0 GT/s PCIe\n"), 5000000000u);
  EXPECT_EQ(parse_link_speed("16.0 GT/s PCIe\n"), 16000000000u);
  EXPECT_EQ(parse_link_speed("64.0 GT/s PCIe\n"), 64000000000u);
  EXPECT_EQ(parse_link_speed("8 GT/s\n"), 8000000000u);
  EXPECT_EQ(parse_link_speed("2.5 GT/s\n"), 2500000000u);
  // PCI_SPEED_UNKNOWN: known to be unknown.
  EXPECT_EQ(parse_link_speed("Unknown\n"), 0u);
  EXPECT_EQ(parse_link_speed("Unknown speed\n"), 0u);
}

TEST(PcieLink, SpeedGarbageIsNoSpeed) {
  for (const char* text :
       {"", "\n", "16.0\n", "16.0 GT/s PCIe extra\n", "16.00 GT/s PCIe\n", "-8 GT/s\n", "0 GT/s\n",
        "2048.0 GT/s PCIe\n", "99999999999999999999 GT/s\n", "1e3 GT/s\n", "16.x GT/s\n", " GT/s\n",
        ".5 GT/s\n", "(null)\n", "33 MHz PCI\n"})
    EXPECT_EQ(parse_link_speed(text), std::nullopt) << text;
}

TEST(PcieLink, WidthsInLanes) {
  EXPECT_EQ(parse_link_width("16\n"), 16u);
  EXPECT_EQ(parse_link_width("1\n"), 1u);
  EXPECT_EQ(parse_link_width("32\n"), 32u);
  EXPECT_EQ(parse_link_width("0\n"), 0u);
  // The register's field holds up to 63; past x32 is no link the specification has.
  for (const char* text :
       {"63\n", "33\n", "-1\n", "x16\n", "16 lanes\n", "\n", "999999999999\n", "08\n"})
    EXPECT_EQ(parse_link_width(text), std::nullopt) << text;
}

TEST(PcieLink, AerTotalsOfTodaysKernel) {
  const std::string fatal =
      "Undefined 0\nDLP 3\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 1\nCmpltAbrt 0\nUnxCmplt 0\nRxOF 0\n"
      "MalfTLP 0\nECRC 0\nUnsupReq 0\nACSViol 0\nUncorrIntErr 0\nBlockedTLP 0\n"
      "AtomicOpBlocked 0\nTLPBlockedErr 0\nPoisonTLPBlocked 0\ndev_fatal_errs_bit[31] 2\n"
      "TOTAL_ERR_FATAL 4\n";
  EXPECT_EQ(parse_aer_total(fatal, "ERR_FATAL"), 4u);
  // The total of another severity is not this file's.
  EXPECT_EQ(parse_aer_total(fatal, "ERR_NONFATAL"), std::nullopt);
}

TEST(PcieLink, AerTotalsOfTheAbiDocumentsSampleWithBlanksInNames) {
  const std::string correctable =
      "Receiver Error 2\nBad TLP 0\nBad DLLP 0\nRELAY_NUM Rollover 0\nReplay Timer Timeout 0\n"
      "Advisory Non-Fatal 0\nCorrected Internal Error 0\nHeader Log Overflow 0\nTOTAL_ERR_COR 2\n";
  EXPECT_EQ(parse_aer_total(correctable, "ERR_COR"), 2u);
}

TEST(PcieLink, AerCountsUpTo64Bits) {
  EXPECT_EQ(parse_aer_total("TOTAL_ERR_FATAL 18446744073709551615\n", "ERR_FATAL"),
            18446744073709551615u);
  EXPECT_EQ(parse_aer_total("TOTAL_ERR_FATAL 18446744073709551616\n", "ERR_FATAL"), std::nullopt);
  EXPECT_EQ(parse_aer_total("TOTAL_ERR_FATAL 999999999999999999999999\n", "ERR_FATAL"),
            std::nullopt);
}

TEST(PcieLink, AerGarbageIsNoCount) {
  for (const char* text :
       {"", "\n", "TOTAL_ERR_FATAL\n", "TOTAL_ERR_FATAL -1\n", "TOTAL_ERR_FATAL 1",
        "TOTAL_ERR_FATAL 1\nTOTAL_ERR_FATAL 2\n", "DLP 1\n", "DLP x\nTOTAL_ERR_FATAL 1\n",
        "TOTAL_ERR_FATAL 0x10\n", "TOTAL_ERR_FATAL  1\n", " 1\nTOTAL_ERR_FATAL 1\n",
        "TOTAL_ERR_FATAL 007\n", "DLP\t1\nTOTAL_ERR_FATAL 1\n", "TOTAL_ERR_FATAL +1\n"})
    EXPECT_EQ(parse_aer_total(text, "ERR_FATAL"), std::nullopt) << text;
}

TEST(PcieLink, ReadsTheFilesOfAFunction) {
  FakeSysfsTree tree;
  const auto dir = tree.add_pci_function(xpu::fakes::kunlunxin_r_series("0000:3b:00.0", 1));
  tree.write_pcie_link("0000:3b:00.0", FakePcieLink{"8.0 GT/s PCIe", 8, "16.0 GT/s PCIe", 16});
  tree.write_aer_counts("0000:3b:00.0", FakeAerCounts{7, 2, 1});
  const PcieLinkState state = read_pcie_link_state(dir);
  EXPECT_EQ(state, (PcieLinkState{8000000000u, 16000000000u, 8u, 16u, 7u, 2u, 1u}));
}

TEST(PcieLink, AVirtualFunctionKnowsNoLink) {
  FakeSysfsTree tree;
  tree.add_pci_function(xpu::fakes::kunlunxin_r_series("0000:3b:00.0", 1));
  auto vf = xpu::fakes::kunlunxin_vf("0000:3b:00.1", "0000:3b:00.0");
  vf.aer.reset();
  const PcieLinkState state = read_pcie_link_state(tree.add_pci_function(vf));
  EXPECT_EQ(state, PcieLinkState{});
}

TEST(PcieLink, MissingFilesLeaveFieldsUnknown) {
  FakeSysfsTree tree;
  auto function = xpu::fakes::kunlunxin_r_series("0000:3b:00.0", 1);
  function.aer.reset();  // a kernel without CONFIG_PCIEAER
  const auto dir = tree.add_pci_function(function);
  ::unlink((dir / "max_link_width").c_str());
  const PcieLinkState state = read_pcie_link_state(dir);
  EXPECT_EQ(state, (PcieLinkState{16000000000u, 16000000000u, 16u, std::nullopt, std::nullopt,
                                  std::nullopt, std::nullopt}));
  EXPECT_EQ(read_pcie_link_state(tree.root() / "sys/bus/pci/devices/0000:99:00.0"),
            PcieLinkState{});
}

TEST(PcieLink, HostileFilesLeaveFieldsUnknownAndTheRestRead) {
  FakeSysfsTree tree;
  const auto dir = tree.add_pci_function(xpu::fakes::kunlunxin_r_series("0000:3b:00.0", 1));
  tree.write_attribute("0000:3b:00.0", "current_link_speed", std::string(5000, 'x'));
  tree.write_attribute("0000:3b:00.0", "current_link_width", std::string("16\0", 3));
  tree.write_attribute("0000:3b:00.0", "aer_dev_fatal", "TOTAL_ERR_FATAL 99999999999999999999\n");
  ::unlink((dir / "aer_dev_nonfatal").c_str());
  ASSERT_EQ(::mkfifo((dir / "aer_dev_nonfatal").c_str(), 0600), 0);  // must not hang the read
  const PcieLinkState state = read_pcie_link_state(dir);
  EXPECT_EQ(state, (PcieLinkState{std::nullopt, 16000000000u, std::nullopt, 16u, 0u, std::nullopt,
                                  std::nullopt}));
}

}  // namespace
}  // namespace xpud::sysfs
