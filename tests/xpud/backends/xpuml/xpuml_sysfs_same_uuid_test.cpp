// Switching a host between the xpuml and the sysfs backend must not rename its cards (device IDs
// are what Kubernetes allocates by): when the library gives no usable UUID, the xpuml backend
// derives the one the sysfs backend gives. One fake host holds both views of the same cards: its
// sysfs tree and the fake libxpuml's scenario.
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "tests/fakes/sysfs/fake_sysfs_tree.h"
#include "tests/xpud/backends/xpuml/fake_xpuml_host.h"
#include "xpud/backends/sysfs/sysfs_backend.h"
#include "xpud/backends/xpuml/xpuml_backend.h"

namespace xpud {
namespace {

using xpu::fakes::kunlunxin_k200;
using xpu::fakes::kunlunxin_r_series;
using xpu::fakes::kunlunxin_vf;

// What both backends can tell about a card (serial and memory are the library's alone).
using SharedIdentity = std::tuple<unsigned, std::string, std::string, std::string, int, bool>;

std::vector<SharedIdentity> shared_identities(Backend& backend) {
  auto devices = backend.discover();
  if (!devices.ok()) {
    ADD_FAILURE() << backend.name() << ": " << devices.error();
    return {};
  }
  std::vector<SharedIdentity> out;
  for (const auto& d : *devices)
    out.emplace_back(d.index, d.uuid, d.pci_bus_id, d.model, d.numa_node, d.is_virtual_function);
  return out;
}

struct LibraryCase {
  const char* name;
  std::filesystem::path (*library)();
  const char* uuid_line;  // added to every device of the scenario
};

// Names the case in test output (ctest names) instead of dumping its bytes.
void PrintTo(const LibraryCase& library_case, std::ostream* out) { *out << library_case.name; }

class XpumlAndSysfsBackends : public ::testing::TestWithParam<LibraryCase> {};

INSTANTIATE_TEST_SUITE_P(
    Libraries, XpumlAndSysfsBackends,
    ::testing::Values(LibraryCase{"WithoutGetUuid", test::fake_xpuml_old_library, ""},
                      LibraryCase{"WithUnusableUuids", test::fake_xpuml_library,
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
  host.write_scenario("devices 5\n"
                      "device 0\n" + u +
                      "bus_id 00000000:3B:00.0\n"
                      "device 1\n" + u +
                      "bus_id 00000000:5E:00.0\nboard 2\npci_subsystem_id 0\n"
                      "device 2\n" + u +
                      "bus_id 00000000:5E:00.0\nboard 2\npci_subsystem_id 0\n"
                      "device 3\n" + u +
                      "bus_id 00000000:AF:00.0\n"
                      "device 4\n" + u +
                      "bus_id 00000000:AF:00.1\npci_device_id 0x36851d22\n");

  auto sysfs = make_sysfs_backend(host.sysfs_root());
  ASSERT_TRUE(sysfs.ok()) << sysfs.error();
  auto xpuml = make_xpuml_backend(GetParam().library(), host.sysfs_root());
  ASSERT_TRUE(xpuml.ok()) << xpuml.error();

  const auto from_sysfs = shared_identities(**sysfs);
  const auto from_xpuml = shared_identities(**xpuml);
  ASSERT_EQ(from_sysfs.size(), 5u);
  EXPECT_EQ(from_xpuml, from_sysfs);

  // The documented scheme (device_uuid.h), and one id per chip.
  EXPECT_EQ(std::get<1>(from_xpuml.at(0)), "8476b011-3489-568c-b45e-bbf7ea54fcab");
  std::set<std::string> uuids;
  for (const auto& card : from_xpuml) uuids.insert(std::get<1>(card));
  EXPECT_EQ(uuids.size(), 5u);
}

}  // namespace
}  // namespace xpud
