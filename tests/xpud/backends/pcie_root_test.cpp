// A card's PCIe root from its bus entry's link, as Kubernetes' resolvePCIeRoot reads it, over fake
// trees whose links are good, lead elsewhere, or are missing.
#include "xpud/backends/pcie_root.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/fakes/sysfs/fake_sysfs_tree.h"
#include "tests/xpud/backends/captured_log.h"

namespace xpud::sysfs {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr std::string_view kBusId = "0000:3b:00.0";

TEST(PcieRootFromLink, TheFirstComponentUnderDevices) {
  EXPECT_EQ(pcie_root_from_link(kBusId, "../../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0"),
            "pci0000:3a");
  // Directly on the root bus, and in another domain.
  EXPECT_EQ(pcie_root_from_link(kBusId, "../../../devices/pci0000:00/0000:3b:00.0"), "pci0000:00");
  EXPECT_EQ(pcie_root_from_link("af12:af:1f.7", "../../../devices/pciaf12:a0/af12:af:1f.7"),
            "pciaf12:a0");
  // Lexically, as filepath.Clean: "." and doubled slashes vanish, ".." climbs.
  EXPECT_EQ(pcie_root_from_link(kBusId, ".//..//../../devices/./pci0000:00/x/../0000:3b:00.0/"),
            "pci0000:00");
}

TEST(PcieRootFromLink, AnythingElseHasNoRoot) {
  for (std::string_view target : {
           "",
           "/sys/devices/pci0000:00/0000:3b:00.0",         // absolute: resolvePCIeRoot refuses
           "../../../devices/pci0000:00/0000:3c:00.0",     // another function
           "../../../devices/pci0000:00",                  // the root itself
           "../../../devices/0000:3b:00.0",                // no root
           "../../../devices/platform/0000:3b:00.0",       // not a PCI root
           "../../../devices/pci0000:00:x/0000:3b:00.0",   // not the kernel's form
           "../../../devices/PCI0000:00/0000:3b:00.0",     // upper case
           "../../../devices/pci0000:0/0000:3b:00.0",      // short bus
           "../../../devices/pci10000:00/0000:3b:00.0",    // a domain no BDF can name
           "../../../../devices/pci0000:00/0000:3b:00.0",  // leaves sysfs
           "../../../../../../../../etc/pci0000:00/0000:3b:00.0",
           "../../../sys/devices/pci0000:00/0000:3b:00.0",  // sys/devices under sysfs
           "../devices/pci0000:00/0000:3b:00.0",            // bus/pci/devices/pci0000:00/...
           "../../../devices/pci0000:00/0000:3b:00.0/..",   // its parent
       })
    EXPECT_EQ(pcie_root_from_link(kBusId, target), std::nullopt) << target;
  // A bus id that is not an extended BDF is refused whatever the link says.
  for (std::string_view bus_id : {"0000:3B:00.0", "3b:00.0", "0000:3b:00.0/..", ""})
    EXPECT_EQ(pcie_root_from_link(
                  bus_id, std::string("../../../devices/pci0000:00/") + std::string(bus_id)),
              std::nullopt)
        << bus_id;
}

class PcieRootEntry : public ::testing::Test {
 protected:
  fs::path entry(std::string_view bus_id) const {
    return tree_.root() / "sys/bus/pci/devices" / bus_id;
  }
  // A bus entry linking to `target` relative to its directory, as the kernel writes it.
  fs::path link(std::string_view bus_id, const fs::path& target) {
    fs::create_directories(entry(bus_id).parent_path());
    fs::create_symlink(target, entry(bus_id));
    return entry(bus_id);
  }
  xpu::fakes::FakeSysfsTree tree_;
};

TEST_F(PcieRootEntry, AGoodLinkThroughBridges) {
  const fs::path dir = tree_.root() / "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0";
  fs::create_directories(dir);
  link(kBusId, "../../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0");
  EXPECT_EQ(read_pcie_root(entry(kBusId), kBusId), "pci0000:3a");
}

TEST_F(PcieRootEntry, TheFakeTreesOwnLayout) {
  tree_.add_pci_function(xpu::fakes::kunlunxin_r_series("0000:3b:00.0", 1, 0));
  EXPECT_EQ(read_pcie_root(entry(kBusId), kBusId), "pci0000:3b");
}

TEST_F(PcieRootEntry, ALinkToSomethingElseIsEmptyAndLogged) {
  xpud::test::CapturedLog log;
  link(kBusId, "../../../devices/platform/\x1b[31mevil/0000:3b:00.0");
  EXPECT_EQ(read_pcie_root(entry(kBusId), kBusId), "");
  EXPECT_EQ(log.count("debug", entry(kBusId).string()), 1) << log.text();
  EXPECT_THAT(log.text(), HasSubstr("?[31mevil")) << "control bytes are not logged as such";
  // A link to another function's directory, and one far out of the tree.
  link("0000:3c:00.0", "../../../devices/pci0000:00/0000:3b:00.0");
  EXPECT_EQ(read_pcie_root(entry("0000:3c:00.0"), "0000:3c:00.0"), "");
  link("0000:3d:00.0", std::string(4000, '/') + "devices/pci0000:00/0000:3d:00.0");
  EXPECT_EQ(read_pcie_root(entry("0000:3d:00.0"), "0000:3d:00.0"), "");
  link("0000:3e:00.0", "0000:3e:00.0");  // a loop: never followed, only read
  EXPECT_EQ(read_pcie_root(entry("0000:3e:00.0"), "0000:3e:00.0"), "");
}

TEST_F(PcieRootEntry, NoEntryOrAPlainDirectoryIsEmpty) {
  xpud::test::CapturedLog log;
  EXPECT_EQ(read_pcie_root(entry(kBusId), kBusId), "");
  EXPECT_EQ(log.text(), "") << "a missing entry is no news";
  fs::create_directories(entry(kBusId));
  EXPECT_EQ(read_pcie_root(entry(kBusId), kBusId), "");
  EXPECT_THAT(log.text(), HasSubstr("not a link"));
  // The entry's directory itself missing, or a file where a directory should be.
  tree_.write_file("sys/bus/pci/devices/0000:3f:00.0", "");
  EXPECT_EQ(read_pcie_root(entry("0000:3f:00.0") / "x", "0000:3f:00.0"), "");
}

TEST_F(PcieRootEntry, ABusIdThatIsNotABdfIsNotRead) {
  xpud::test::CapturedLog log;
  link("0000:3B:00.0", "../../../devices/pci0000:00/0000:3B:00.0");
  EXPECT_EQ(read_pcie_root(entry("0000:3B:00.0"), "0000:3B:00.0"), "");
  EXPECT_THAT(log.text(), HasSubstr("extended BDF"));
}

}  // namespace
}  // namespace xpud::sysfs
