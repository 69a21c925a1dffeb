// LinkedDevices on the real backends: the shipped topology quirk table, read by xpud on the sysfs
// backend (fake sysfs tree) and the xpuml backend (fake libxpuml), seen over D-Bus by a client.
// Eight R300s get the links of the driver's KL2_R300_CCIX_TOPOLOGY by physical id (their index),
// whatever their PCI order; a board the table does not know (the R200: no public source gives its
// links) gets none and xpud says so once; a broken table costs the links, not the service.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "common/xpud_client.h"
#include "tests/fakes/sysfs/fake_sysfs_tree.h"
#include "tests/support/child_process.h"
#include "tests/support/notify_socket.h"
#include "tests/support/private_bus.h"
#include "tests/support/wait.h"

namespace {

using namespace std::chrono_literals;
using xpu::test::binary_path;
using xpu::test::ChildProcess;
using xpu::test::wait_until;
using xpu::test::write_file;

const std::string kShippedTable = std::string(XPU_SOURCE_DIR) + "/xpud/backends/topology.quirk";

// Where the eight R300s sit: PCI position k (ascending bus id) holds /dev/xpu<kIndexOf[k]>.
// Deliberately not the identity, so the test tells PCI order from index order.
constexpr unsigned kIndexOf[8] = {2, 0, 3, 1, 5, 7, 4, 6};
constexpr unsigned kBus[8] = {0x1a, 0x1b, 0x3d, 0x3e, 0x88, 0x89, 0xb1, 0xb2};

std::string bus_id(unsigned k) {
  char text[16];
  std::snprintf(text, sizeof text, "0000:%02x:00.0", kBus[k]);
  return text;
}

// The driver's KL2_R300_CCIX_TOPOLOGY decoded (docs/hardware.md), by physical id = index.
std::map<unsigned, std::vector<unsigned>> driver_links() {
  static const unsigned pairs[][2] = {{0, 1}, {0, 3}, {1, 2}, {1, 5}, {2, 3}, {2, 5},
                                      {2, 6}, {3, 4}, {4, 5}, {4, 7}, {5, 6}, {6, 7}};
  std::map<unsigned, std::vector<unsigned>> links;
  for (const auto& [a, b] : pairs) {
    links[a].push_back(b);
    links[b].push_back(a);
  }
  for (auto& [id, row] : links) std::sort(row.begin(), row.end());
  return links;
}

std::map<unsigned, std::vector<unsigned>> links_over_dbus(
    const std::vector<xpu::DeviceInfo>& devices) {
  std::map<unsigned, std::vector<unsigned>> links;
  for (const auto& d : devices) {
    auto row = d.linked_devices;
    std::sort(row.begin(), row.end());
    links[d.index] = row;
  }
  return links;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class XpudTopology : public ::testing::Test {
 protected:
  void start(const std::string& config, std::map<std::string, std::string> env = {}) {
    write_file(dir_.path() / "xpud.conf", "[sampling]\ninterval_ms = 100\n" + config);
    env.emplace("NOTIFY_SOCKET", notify_.path());
    xpud_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{binary_path("xpud/xpud").string(), "--bus-address", bus_.address(),
                                 "--config", (dir_.path() / "xpud.conf").string()},
        dir_.path() / "xpud.log", env);
    ASSERT_GE(notify_.wait_for("READY=1", 10s), 0) << xpud_->output();
  }

  std::vector<xpu::DeviceInfo> devices(std::size_t expected) {
    xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});
    std::vector<xpu::DeviceInfo> found;
    EXPECT_TRUE(wait_until([&] {
      auto listed = client.list_devices();
      if (listed) found = *listed;
      return listed && listed->size() == expected;
    })) << xpud_->output();
    return found;
  }

  // Lets xpud run `cycles` more discoveries (100 ms apart), so "once" means once.
  void let_it_run(int cycles) {
    const auto until = std::chrono::steady_clock::now() + cycles * 100ms;
    wait_until([&] { return std::chrono::steady_clock::now() >= until; }, cycles * 100ms + 1s);
  }

  xpu::test::TempDir dir_;
  xpu::test::PrivateBus bus_;
  xpu::test::NotifySocket notify_{dir_.path() / "notify"};
  std::unique_ptr<ChildProcess> xpud_;
};

// ---- sysfs backend, fake sysfs tree ----

class XpudTopologySysfs : public XpudTopology {
 protected:
  XpudTopologySysfs() {
    tree_.add_control_node();
    for (unsigned k = 0; k < 8; ++k) {
      tree_.add_card(xpu::fakes::kunlunxin_r_series(bus_id(k), 3, k < 4 ? 0 : 1), kIndexOf[k]);
      tree_.publish_class_device(bus_id(k), kIndexOf[k]);
    }
  }

  std::string config(const std::string& table) {
    return "[daemon]\nbackend = sysfs\n[sysfs]\nroot = " + tree_.root().string() +
           "\n[topology]\nquirks = " + table + "\n";
  }

  xpu::fakes::FakeSysfsTree tree_;
};

TEST_F(XpudTopologySysfs, EightR300sGetTheDriversLinksByPhysicalId) {
  start(config(kShippedTable));
  EXPECT_EQ(links_over_dbus(devices(8)), driver_links()) << xpud_->output();
}

TEST_F(XpudTopologySysfs, AnR200GetsNoneAndSaysSoOnce) {
  tree_.add_card(xpu::fakes::kunlunxin_r_series("0000:d8:00.0", 1, 1), 8);  // an R200
  tree_.publish_class_device("0000:d8:00.0", 8);
  start(config(kShippedTable));
  auto found = devices(9);
  ASSERT_EQ(found.size(), 9u);
  EXPECT_EQ(found[8].model, "R200");
  EXPECT_TRUE(found[8].linked_devices.empty());
  EXPECT_EQ(found[0].linked_devices.size(), 2u) << "the R300s keep theirs";
  let_it_run(10);
  EXPECT_EQ(count(xpud_->output(), "no entry for board R200"), 1u) << xpud_->output();
}

TEST_F(XpudTopologySysfs, FewerCardsThanTheTableGetNone) {
  tree_.remove_pci_function(bus_id(7));
  tree_.remove_device_node(kIndexOf[7]);
  start(config(kShippedTable));
  auto found = devices(7);
  for (const auto& d : found) EXPECT_TRUE(d.linked_devices.empty()) << d.index;
  let_it_run(5);
  EXPECT_EQ(count(xpud_->output(), "7 cards of board [R300] on this node"), 1u) << xpud_->output();
}

TEST_F(XpudTopologySysfs, ABrokenTableCostsTheLinksNotTheService) {
  const auto table = dir_.path() / "broken.quirk";
  write_file(table,
             "[R300]\nMatch = pci 1d22:3684 subsystem 0002:0003\nCards = 8\nLinks.0 = 1 2 3 9\n");
  start(config(table.string()));
  auto found = devices(8);
  for (const auto& d : found) EXPECT_TRUE(d.linked_devices.empty()) << d.index;
  EXPECT_NE(xpud_->output().find(table.string() + ":4: Links.0 names card 9, beyond Cards = 8"),
            std::string::npos)
      << xpud_->output();
}

TEST_F(XpudTopologySysfs, AMissingTableCostsTheLinksNotTheService) {
  start(config((dir_.path() / "none.quirk").string()));
  auto found = devices(8);
  for (const auto& d : found) EXPECT_TRUE(d.linked_devices.empty()) << d.index;
  EXPECT_NE(xpud_->output().find("none.quirk: cannot open: No such file or directory"),
            std::string::npos)
      << xpud_->output();
}

// ---- xpuml backend, fake libxpuml ----

class XpudTopologyXpuml : public XpudTopology {
 protected:
  // Eight R300s (board 101, PCI subsystem 2/3) at kBus with indices kIndexOf, plus `extra`.
  void start_with(const std::string& extra_devices, unsigned extra_count) {
    std::string scenario = "devices " + std::to_string(8 + extra_count) + "\n";
    for (unsigned k = 0; k < 8; ++k) {
      char bus[32];
      std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", kBus[k]);
      scenario += "device " + std::to_string(k) + "\nid " + std::to_string(kIndexOf[k]) +
                  "\nbus_id " + bus + "\nboard 101\npci_subsystem_id 0x00030002\n";
    }
    scenario += extra_devices;
    write_file(dir_.path() / "scenario", scenario);
    start("[daemon]\nbackend = xpuml\n[xpuml]\nlibrary = " FAKE_XPUML "\n[sysfs]\nroot = " +
              dir_.path().string() + "\n[topology]\nquirks = " + kShippedTable + "\n",
          {{"XPUML_FAKE_SCRIPT", (dir_.path() / "scenario").string()}});
  }
};

// Expected links are by the index xpud serves, which is the physical id: the test holds
// whichever library call names the cards.
TEST_F(XpudTopologyXpuml, EightR300sGetTheDriversLinksByPhysicalId) {
  start_with("", 0);
  EXPECT_EQ(links_over_dbus(devices(8)), driver_links()) << xpud_->output();
}

TEST_F(XpudTopologyXpuml, AnR200GetsNoneAndSaysSoOnce) {
  // An R200: board 100, PCI subsystem 2/1.
  start_with("device 8\nid 8\nbus_id 00000000:D8:00.0\nboard 100\npci_subsystem_id 0x00010002\n",
             1);
  auto found = devices(9);
  ASSERT_EQ(found.size(), 9u);
  EXPECT_EQ(found[8].model, "R200");
  EXPECT_TRUE(found[8].linked_devices.empty());
  EXPECT_EQ(links_over_dbus({found.begin(), found.begin() + 8}), driver_links());
  let_it_run(10);
  EXPECT_EQ(count(xpud_->output(),
                  "no entry for board R200 (pci 1d22:3684 subsystem 0002:0001, xpuml board-id 100"),
            1u)
      << xpud_->output();
}

}  // namespace
