// Switching a host between the xpuml and the sysfs backend must not rename its cards: neither
// their device IDs (what Kubernetes allocates by; when the library gives no usable UUID, the
// xpuml backend derives the one the sysfs backend gives) nor their index, hence object path,
// /dev/xpuN and XPU_VISIBLE_DEVICES (both take it from the driver's node number: the physical id,
// or the xpuN class device under the PCI function). One fake host holds both views of the same
// cards: its sysfs tree and the fake libxpuml's scenario.
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "tests/fakes/sysfs/fake_sysfs_tree.h"
#include "tests/support/wait.h"
#include "tests/xpud/backends/xpuml/fake_xpuml_host.h"
#include "xpud/backends/auto_backend.h"
#include "xpud/backends/sysfs/sysfs_backend.h"
#include "xpud/backends/xpuml/xpuml_backend.h"

namespace xpud {
namespace {

using xpu::fakes::kunlunxin_k200;
using xpu::fakes::kunlunxin_r_series;
using xpu::fakes::kunlunxin_vf;

using namespace std::chrono_literals;

// What both backends can tell about a card (serial and memory are the library's alone).
using SharedIdentity = std::tuple<unsigned, std::string, std::string, std::string, int, bool,
                                  std::vector<std::string>, std::string>;

std::vector<SharedIdentity> shared_identities(const std::vector<DeviceIdentity>& devices) {
  std::vector<SharedIdentity> out;
  for (const auto& d : devices)
    out.emplace_back(d.index, d.uuid, d.pci_bus_id, d.model, d.numa_node, d.is_virtual_function,
                     d.device_nodes, d.pcie_root);
  return out;
}

std::vector<SharedIdentity> shared_identities(Backend& backend) {
  auto devices = backend.discover();
  if (!devices.ok()) {
    ADD_FAILURE() << backend.name() << ": " << devices.error();
    return {};
  }
  return shared_identities(*devices);
}

struct LibraryCase {
  const char* name;
  std::filesystem::path (*library)();
  const char* uuid_line;  // added to every device of the scenario
};

// Names the case in test output (ctest names) instead of dumping its bytes.
void PrintTo(const LibraryCase& library_case, std::ostream* out) {
  *out << library_case.name;
}

class XpumlAndSysfsBackends : public ::testing::TestWithParam<LibraryCase> {};

INSTANTIATE_TEST_SUITE_P(
    Libraries, XpumlAndSysfsBackends,
    ::testing::Values(LibraryCase{"OldLibrary", test::fake_xpuml_old_library, ""},
                      LibraryCase{"CurrentLibrary", test::fake_xpuml_library, ""},
                      LibraryCase{"WithUnusableUuids", test::fake_xpuml_uuid_library,
                                  "uuid not a usable id\n"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_P(XpumlAndSysfsBackends, GiveTheSameCardsTheSameUuids) {
  test::FakeXpumlHost host;
  auto& tree = host.tree();
  tree.add_control_node();
  // An R200, a K200 (two chips, one address), and an R200 with one SR-IOV virtual function.
  tree.add_card(kunlunxin_r_series("0000:3b:00.0", 1, 0), 0);
  tree.add_card(kunlunxin_k200("0000:5e:00.0", 0), 1);
  auto pf = kunlunxin_r_series("0000:af:00.0", 1, 1);
  pf.sriov_totalvfs = 4;
  pf.sriov_numvfs = 1;
  tree.add_card(pf, 3);
  tree.add_card(kunlunxin_vf("0000:af:00.1", "0000:af:00.0", 1), 4);

  const std::string u = GetParam().uuid_line;
  host.write_scenario(
      "devices 5\n"
      "device 0\n" +
      u +
      "bus_id 00000000:3B:00.0\n"
      "device 1\n" +
      u +
      "bus_id 00000000:5E:00.0\nboard 2\npci_subsystem_id 0\n"
      "device 2\n" +
      u +
      "bus_id 00000000:5E:00.0\nboard 2\npci_subsystem_id 0\n"
      "device 3\n" +
      u +
      "bus_id 00000000:AF:00.0\n"
      "device 4\n" +
      u + "bus_id 00000000:AF:00.1\npci_device_id 0x36851d22\n");

  auto sysfs = make_sysfs_backend(host.sysfs_root());
  ASSERT_TRUE(sysfs.ok()) << sysfs.error();
  auto xpuml = make_xpuml_backend(GetParam().library(), host.sysfs_root());
  ASSERT_TRUE(xpuml.ok()) << xpuml.error();

  const auto from_sysfs = shared_identities(**sysfs);
  const auto from_xpuml = shared_identities(**xpuml);
  ASSERT_EQ(from_sysfs.size(), 5u);
  EXPECT_EQ(from_xpuml, from_sysfs);

  EXPECT_EQ(std::get<0>(from_xpuml.at(1)), 1u);
  EXPECT_EQ(std::get<0>(from_xpuml.at(2)), 2u);
  // The documented scheme (device_uuid.h), and one id per chip.
  EXPECT_EQ(std::get<1>(from_xpuml.at(0)), "8476b011-3489-568c-b45e-bbf7ea54fcab");
  // Both read the root from the same bus entry link (the fake tree's: pci<domain>:<bus>).
  EXPECT_EQ(std::get<7>(from_xpuml.at(0)), "pci0000:3b");
  EXPECT_EQ(std::get<7>(from_xpuml.at(4)), "pci0000:af");
  std::set<std::string> uuids;
  for (const auto& card : from_xpuml) uuids.insert(std::get<1>(card));
  EXPECT_EQ(uuids.size(), 5u);
}

// The driver's node numbers, neither the minors (0, 2, 4, ... in the library's order) nor the
// library's order: an R200 at xpu5, a K200 at xpu0 and xpu1, a PF at xpu2 with its VF at xpu7.
// The library lists them VF, R200, K200 (the chip behind xpu1 first), PF.
void add_scrambled_host(test::FakeXpumlHost& host, bool publish_class_devices) {
  auto& tree = host.tree();
  tree.add_control_node();
  tree.add_card(kunlunxin_r_series("0000:3b:00.0", 1, 0), 5);
  tree.add_card(kunlunxin_k200("0000:5e:00.0", 0), 0);
  auto pf = kunlunxin_r_series("0000:af:00.0", 1, 1);
  pf.sriov_totalvfs = 4;
  pf.sriov_numvfs = 1;
  tree.add_card(pf, 2);
  tree.add_card(kunlunxin_vf("0000:af:00.1", "0000:af:00.0", 1), 7);
  if (publish_class_devices) {
    tree.publish_class_device("0000:3b:00.0", 5);
    tree.publish_class_device("0000:5e:00.0", 0);
    tree.publish_class_device("0000:5e:00.0", 1);
    tree.publish_class_device("0000:af:00.0", 2);
    tree.publish_class_device("0000:af:00.1", 7);
  }
  host.write_scenario(
      "devices 5\n"
      "device 0\nid 7\nbus_id 00000000:AF:00.1\npci_device_id 0x36851d22\n"
      "device 1\nid 5\nbus_id 00000000:3B:00.0\n"
      "device 2\nid 1\nbus_id 00000000:5E:00.0\nboard 2\npci_subsystem_id 0\n"
      "device 3\nid 0\nbus_id 00000000:5E:00.0\nboard 2\npci_subsystem_id 0\n"
      "device 4\nid 2\nbus_id 00000000:AF:00.0\n");
}

TEST(XpumlAndSysfsNames, PhysicalIdsNameCardsAsTheDriverNodesDo) {
  test::FakeXpumlHost host;
  add_scrambled_host(host, true);
  auto sysfs = make_sysfs_backend(host.sysfs_root());
  ASSERT_TRUE(sysfs.ok()) << sysfs.error();
  auto xpuml = make_xpuml_backend(test::fake_xpuml_library(), host.sysfs_root());
  ASSERT_TRUE(xpuml.ok()) << xpuml.error();
  const auto from_sysfs = shared_identities(**sysfs);
  ASSERT_EQ(from_sysfs.size(), 5u);
  EXPECT_EQ(shared_identities(**xpuml), from_sysfs);
  std::vector<unsigned> indices;
  for (const auto& card : from_sysfs) indices.push_back(std::get<0>(card));
  EXPECT_EQ(indices, (std::vector<unsigned>{0, 1, 2, 5, 7}));
}

TEST(XpumlAndSysfsNames, AnOlderLibraryNamesCardsByTheClassDevices) {
  test::FakeXpumlHost host;
  add_scrambled_host(host, true);
  auto sysfs = make_sysfs_backend(host.sysfs_root());
  ASSERT_TRUE(sysfs.ok()) << sysfs.error();
  auto xpuml = make_xpuml_backend(test::fake_xpuml_old_library(), host.sysfs_root());
  ASSERT_TRUE(xpuml.ok()) << xpuml.error();
  const auto from_sysfs = shared_identities(**sysfs);
  ASSERT_EQ(from_sysfs.size(), 5u);
  EXPECT_EQ(shared_identities(**xpuml), from_sysfs);
}

// backend = auto: serves sysfs's view until the library initialises, then the library's; every
// card keeps its index (object path, /dev/xpuN) and its UUID across the move.
TEST(XpumlAndSysfsNames, TheAutoBackendsMoveFromSysfsToXpumlKeepsEveryName) {
  test::FakeXpumlHost host;
  add_scrambled_host(host, true);
  auto sysfs = make_sysfs_backend(host.sysfs_root());
  ASSERT_TRUE(sysfs.ok()) << sysfs.error();
  AutoBackend::Opener open = [library = test::fake_xpuml_library(),
                              root = host.sysfs_root()](bool* init_failed) {
    return make_xpuml_backend(library, root, init_failed);
  };
  AutoBackend backend(std::move(*sysfs), open, std::make_unique<TimeBoxedExecutor>(2000ms),
                      std::make_shared<AutoBackend::Attempts>(),
                      "xpumlInit(libxpuml.so.1): DRIVER_NOT_LOADED (9)", RetryBackoff{5ms, 5ms});
  auto before = backend.discover();
  ASSERT_TRUE(before.ok()) << before.error();
  ASSERT_EQ(before->size(), 5u);
  std::vector<DeviceIdentity> after;
  ASSERT_TRUE(xpu::test::wait_until(
      [&] {
        auto found = backend.discover();
        if (found.ok()) after = *found;
        return backend.name() == "xpuml";
      },
      10s));
  EXPECT_EQ(shared_identities(after), shared_identities(*before));
}

}  // namespace
}  // namespace xpud
