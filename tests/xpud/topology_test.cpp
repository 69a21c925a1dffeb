// LinkedDevices on the real backends: the shipped topology quirk table, read by xpud on the sysfs
// backend (fake sysfs tree) and the xpuml backend (fake libxpuml), seen over D-Bus by a client.
// Eight R200s get the links of xpu-facts.md by PCI order; a board the table does not know gets
// none and xpud says so once; a broken table costs the links, not the service.
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

// Where the eight R200s sit: PCI position k (ascending bus id) holds /dev/xpu<kIndexOf[k]>.
// Deliberately not the identity, so the test tells PCI order from index order.
constexpr unsigned kIndexOf[8] = {2, 0, 3, 1, 5, 7, 4, 6};
constexpr unsigned kBus[8] = {0x1a, 0x1b, 0x3d, 0x3e, 0x88, 0x89, 0xb1, 0xb2};

std::string bus_id(unsigned k) {
  char text[16];
  std::snprintf(text, sizeof text, "0000:%02x:00.0", kBus[k]);
  return text;
}

// What xpu-facts.md says about the 8-card node, by host index.
std::map<unsigned, std::vector<unsigned>> facts_links() {
  std::map<unsigned, std::vector<unsigned>> links;
  for (unsigned k = 0; k < 8; ++k) {
    auto& row = links[kIndexOf[k]];
    for (unsigned j = 0; j < 8; ++j)
      if (j != k && ((j < 4) == (k < 4) || j % 4 == k % 4)) row.push_back(kIndexOf[j]);
    std::sort(row.begin(), row.end());
  }
  return links;
}

std::map<unsigned, std::vector<unsigned>> links_over_dbus(const std::vector<xpu::DeviceInfo>& devices) {
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
      tree_.add_card(xpu::fakes::kunlunxin_r_series(bus_id(k), 1, k < 4 ? 0 : 1), kIndexOf[k]);
      tree_.publish_class_device(bus_id(k), kIndexOf[k]);
    }
  }

  std::string config(const std::string& table) {
    return "[daemon]\nbackend = sysfs\n[sysfs]\nroot = " + tree_.root().string() + "\n[topology]\nquirks = " +
           table + "\n";
  }

  xpu::fakes::FakeSysfsTree tree_;
};

TEST_F(XpudTopologySysfs, EightR200sGetTheLinksOfTheFactsByPciOrder) {
  start(config(kShippedTable));
  EXPECT_EQ(links_over_dbus(devices(8)), facts_links()) << xpud_->output();
}

TEST_F(XpudTopologySysfs, AnUnknownBoardGetsNoneAndSaysSoOnce) {
  tree_.add_card(xpu::fakes::kunlunxin_r_series("0000:d8:00.0", 3, 1), 8);  // an R300
  tree_.publish_class_device("0000:d8:00.0", 8);
  start(config(kShippedTable));
  auto found = devices(9);
  ASSERT_EQ(found.size(), 9u);
  EXPECT_EQ(found[8].model, "R300");
  EXPECT_TRUE(found[8].linked_devices.empty());
  EXPECT_EQ(found[kIndexOf[0]].linked_devices.size(), 4u) << "the R200s keep theirs";
  let_it_run(10);
  EXPECT_EQ(count(xpud_->output(), "no entry for board R300"), 1u) << xpud_->output();
}

TEST_F(XpudTopologySysfs, FewerCardsThanTheTableGetNone) {
  tree_.remove_pci_function(bus_id(7));
  tree_.remove_device_node(kIndexOf[7]);
  start(config(kShippedTable));
  auto found = devices(7);
  for (const auto& d : found) EXPECT_TRUE(d.linked_devices.empty()) << d.index;
  let_it_run(5);
  EXPECT_EQ(count(xpud_->output(), "7 cards of board [R200] on this node"), 1u) << xpud_->output();
}

TEST_F(XpudTopologySysfs, ABrokenTableCostsTheLinksNotTheService) {
  const auto table = dir_.path() / "broken.quirk";
  write_file(table, "[R200]\nMatch = pci 1d22:3684 subsystem 0002:0001\nCards = 8\nLinks.0 = 1 2 3 9\n");
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
  EXPECT_NE(xpud_->output().find("none.quirk: cannot open: No such file or directory"), std::string::npos)
      << xpud_->output();
}

// ---- xpuml backend, fake libxpuml ----

class XpudTopologyXpuml : public XpudTopology {
 protected:
  // Eight R200s (board 100, PCI subsystem 2/1) at kBus with physical ids kIndexOf (their /dev/xpuN), plus `extra`.
  void start_with(const std::string& extra_devices, unsigned extra_count) {
    std::string scenario = "devices " + std::to_string(8 + extra_count) + "\n";
    for (unsigned k = 0; k < 8; ++k) {
      char bus[32];
      std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", kBus[k]);
      scenario += "device " + std::to_string(k) + "\nid " + std::to_string(kIndexOf[k]) + "\nbus_id " + bus +
                  "\nboard 100\n";
    }
    scenario += extra_devices;
    write_file(dir_.path() / "scenario", scenario);
    start("[daemon]\nbackend = xpuml\n[xpuml]\nlibrary = " FAKE_XPUML "\n[sysfs]\nroot = " + dir_.path().string() +
              "\n[topology]\nquirks = " + kShippedTable + "\n",
          {{"XPUML_FAKE_SCRIPT", (dir_.path() / "scenario").string()}});
  }
};

TEST_F(XpudTopologyXpuml, EightR200sGetTheLinksOfTheFactsByPciOrder) {
  start_with("", 0);
  EXPECT_EQ(links_over_dbus(devices(8)), facts_links()) << xpud_->output();
}

TEST_F(XpudTopologyXpuml, AnUnknownBoardGetsNoneAndSaysSoOnce) {
  // An R300: board 101, PCI subsystem 2/3.
  start_with("device 8\nid 8\nbus_id 00000000:D8:00.0\nboard 101\npci_subsystem_id 0x00030002\n", 1);
  auto found = devices(9);
  ASSERT_EQ(found.size(), 9u);
  EXPECT_EQ(found[8].model, "R300");
  EXPECT_TRUE(found[8].linked_devices.empty());
  EXPECT_EQ(links_over_dbus({found.begin(), found.begin() + 8}), facts_links());
  let_it_run(10);
  EXPECT_EQ(count(xpud_->output(), "no entry for board R300 (pci 1d22:3684 subsystem 0002:0003, xpuml board-id 101"),
            1u)
      << xpud_->output();
}

}  // namespace
