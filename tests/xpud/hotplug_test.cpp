// Cards that appear and vanish while xpud runs (hot-plug, a VF count change) update the object
// tree through ObjectManager signals. Driven through the sysfs backend on a fake sysfs tree, the
// hardware boundary, with the real xpud on a real private bus; the kernel's announcements come
// through xpud's test event socket (XPUD_TEST_DEVICE_EVENTS), the same path as udev's events
// from there on.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <sdbus-c++/sdbus-c++.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "common/names.h"
#include "common/unique_fd.h"
#include "common/xpud_client.h"
#include "tests/fakes/sysfs/fake_sysfs_tree.h"
#include "tests/support/child_process.h"
#include "tests/support/private_bus.h"
#include "tests/support/wait.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace names = xpu::names;

// What the kernel says when a PCI function or a device node comes or goes, as uevent properties.
std::string pci_event(const std::string& action, const std::string& bus_id,
                      const std::string& pci_id = "1D22:3684") {
  return "ACTION=" + action + "\nDEVPATH=/devices/pci0000:00/" + bus_id +
         "\nSUBSYSTEM=pci\nPCI_ID=" + pci_id + "\n";
}
std::string node_event(const std::string& action, const std::string& bus_id, unsigned index) {
  return "ACTION=" + action + "\nDEVPATH=/devices/pci0000:00/" + bus_id + "/xpu/xpu" +
         std::to_string(index) + "\nSUBSYSTEM=xpu\nDEVNAME=xpu" + std::to_string(index) + "\n";
}

// xpud on the sysfs backend over a fake tree, with the signals of its ObjectManager recorded.
class XpudHotplug : public ::testing::Test {
 protected:
  void SetUp() override {
    tree.add_control_node();
    add_card("0000:3b:00.0", 0, 0);
    add_card("0000:3d:00.0", 0, 1);
  }

  // A card as the driver publishes it: a PCI function, its /dev node and its xpuN class device,
  // which fixes the index for as long as the card is present.
  void add_card(const std::string& bus_id, int numa, unsigned index) {
    tree.add_card(xpu::fakes::kunlunxin_r_series(bus_id, 1, numa), index);
    tree.publish_class_device(bus_id, index);
  }

  void start(const std::string& sampling, const std::filesystem::path& event_socket) {
    xpu::test::write_file(dir.path() / "xpud.conf",
                          "[daemon]\nbackend = sysfs\nlog_level = debug\n[sampling]\n" + sampling +
                              "[sysfs]\nroot = " + tree.root().string() + "\n");
    xpud.emplace(
        std::vector<std::string>{xpu::test::binary_path("xpud/xpud").string(), "--bus-address",
                                 bus.address(), "--config", (dir.path() / "xpud.conf").string()},
        dir.path() / "xpud.log",
        std::map<std::string, std::string>{{"XPUD_TEST_DEVICE_EVENTS", event_socket.string()}});
    client.emplace(xpu::ClientOptions{bus.address(), 2s});
    ASSERT_TRUE(xpu::test::wait_until([&] { return client->list_devices().ok(); }))
        << xpud->output();
    ASSERT_EQ(client->list_devices()->size(), 2u);

    connection = sdbus::createSessionBusConnectionWithAddress(bus.address());
    manager = sdbus::createProxy(*connection, std::string(names::kBusName),
                                 std::string(names::kManagerPath));
    manager->uponSignal("InterfacesAdded")
        .onInterface("org.freedesktop.DBus.ObjectManager")
        .call([this](const sdbus::ObjectPath& path,
                     const std::map<std::string, std::map<std::string, sdbus::Variant>>& ifaces) {
          std::lock_guard lock(mutex);
          if (ifaces.count(std::string(names::kDeviceInterface)))
            added.push_back({path, Clock::now()});
        });
    manager->uponSignal("InterfacesRemoved")
        .onInterface("org.freedesktop.DBus.ObjectManager")
        .call([this](const sdbus::ObjectPath& path, const std::vector<std::string>& ifaces) {
          std::lock_guard lock(mutex);
          if (std::find(ifaces.begin(), ifaces.end(), names::kDeviceInterface) != ifaces.end())
            removed.push_back(path);
        });
    manager->finishRegistration();
    connection->enterEventLoopAsync();
  }

  void TearDown() override {
    if (connection) connection->leaveEventLoop();
  }

  // Sends one event to xpud's test socket; returns when it was sent.
  Clock::time_point inject(const std::string& properties) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, event_socket().c_str(), sizeof address.sun_path - 1);
    xpu::UniqueFd socket(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    EXPECT_TRUE(socket.valid());
    const auto sent = Clock::now();
    EXPECT_EQ(::sendto(socket.get(), properties.data(), properties.size(), 0,
                       reinterpret_cast<const sockaddr*>(&address), sizeof address),
              static_cast<ssize_t>(properties.size()))
        << "sendto " << event_socket() << ": " << std::strerror(errno);
    return sent;
  }

  std::filesystem::path event_socket() const { return dir.path() / "events.sock"; }

  std::vector<std::string> added_paths() {
    std::lock_guard lock(mutex);
    std::vector<std::string> paths;
    for (const auto& [path, when] : added) paths.push_back(path);
    return paths;
  }
  std::vector<std::string> removed_paths() {
    std::lock_guard lock(mutex);
    return removed;
  }
  // Lets `n` more samples happen (each GetMetrics timestamp is one cycle's).
  bool wait_cycles(unsigned n) {
    std::uint64_t last = 0;
    unsigned seen = 0;
    return xpu::test::wait_until(
        [&] {
          auto metrics = client->get_metrics();
          if (metrics && metrics->timestamp_usec != last) {
            if (last != 0) ++seen;
            last = metrics->timestamp_usec;
          }
          return seen >= n;
        },
        10s);
  }
  std::size_t occurrences(const std::string& text) {
    const std::string log = xpud->output();
    std::size_t count = 0;
    for (std::size_t at = log.find(text); at != std::string::npos; at = log.find(text, at + 1))
      ++count;
    return count;
  }

  xpu::fakes::FakeSysfsTree tree;
  xpu::test::TempDir dir;
  xpu::test::PrivateBus bus;
  std::optional<xpu::test::ChildProcess> xpud;
  std::optional<xpu::XpudClient> client;
  std::unique_ptr<sdbus::IConnection> connection;
  std::unique_ptr<sdbus::IProxy> manager;
  std::mutex mutex;
  std::vector<std::pair<std::string, Clock::time_point>> added;
  std::vector<std::string> removed;
};

TEST_F(XpudHotplug, AddedAndRemovedCardsAreSignalledThroughObjectManager) {
  // No rescan during the test: only the events can find the new cards.
  start("interval_ms = 100\nrescan_interval_ms = 3600000\n", event_socket());
  ASSERT_NE(xpud->output().find("watching test events from"), std::string::npos) << xpud->output();

  add_card("0000:b1:00.0", 1, 2);
  ASSERT_TRUE(wait_cycles(3)) << xpud->output();
  EXPECT_TRUE(added_paths().empty()) << "a card was discovered without a device event";

  // The node's event (udev announces it once /dev/xpu2 exists), then the PCI function's bind.
  const auto sent = inject(node_event("add", "0000:b1:00.0", 2));
  inject(pci_event("bind", "0000:b1:00.0"));
  ASSERT_TRUE(xpu::test::wait_until(
      [&] { return added_paths() == std::vector<std::string>{names::device_path(2)}; }, 5s))
      << xpud->output();
  auto devices = client->list_devices();
  ASSERT_TRUE(devices);
  ASSERT_EQ(devices->size(), 3u);
  EXPECT_EQ((*devices)[2].pci_bus_id, "0000:b1:00.0");
  EXPECT_EQ((*devices)[2].numa_node, 1);

  // Time from the event to the new object, for the closing note: a few more cards.
  std::vector<double> latencies_ms;
  {
    std::lock_guard lock(mutex);
    latencies_ms.push_back(
        std::chrono::duration<double, std::milli>(added.back().second - sent).count());
  }
  for (unsigned index = 3; index < 6; ++index) {
    char bus_id[16];
    std::snprintf(bus_id, sizeof bus_id, "0000:%02x:00.0", 0xb3 + 2 * (index - 3));
    add_card(bus_id, 1, index);
    ASSERT_TRUE(wait_cycles(1));
    const auto at = inject(node_event("add", bus_id, index));
    ASSERT_TRUE(xpu::test::wait_until([&] { return added_paths().size() == index - 1; }, 5s))
        << xpud->output();
    std::lock_guard lock(mutex);
    latencies_ms.push_back(
        std::chrono::duration<double, std::milli>(added.back().second - at).count());
  }
  std::printf("uevent to InterfacesAdded (ms, 100 ms sampling interval):");
  for (double ms : latencies_ms) std::printf(" %.1f", ms);
  std::printf("\n");
  for (double ms : latencies_ms)
    EXPECT_LT(ms, 1000.0) << "slower than a discovery on the next cycle";

  tree.remove_pci_function("0000:3d:00.0");
  tree.remove_device_node(1);
  inject(node_event("remove", "0000:3d:00.0", 1));
  inject(pci_event("remove", "0000:3d:00.0"));
  ASSERT_TRUE(xpu::test::wait_until(
      [&] { return removed_paths() == std::vector<std::string>{names::device_path(1)}; }, 5s))
      << xpud->output();
  auto manager_info = client->manager_info();
  ASSERT_TRUE(manager_info);
  EXPECT_EQ(manager_info->device_count, 5u);
  EXPECT_NE(xpud->output().find("xpu1: device removed"), std::string::npos) << xpud->output();
}

TEST_F(XpudHotplug, EventsOfOtherDevicesAndMalformedOnesDiscoverNothing) {
  start("interval_ms = 100\nrescan_interval_ms = 3600000\n", event_socket());
  add_card("0000:b1:00.0", 1, 2);
  inject(pci_event("add", "0000:b1:00.0", "8086:1572"));  // a NIC
  inject("ACTION=add\nDEVPATH=/devices/virtual/net/veth0\nSUBSYSTEM=net\n");
  inject("this is not a uevent");
  inject(
      std::string(
          "ACTION=add\nSUBSYSTEM=pci\nDEVPATH=/devices/pci0000:00/0000:b1:00.0\nPCI_ID=1D22:\x01") +
      "\n");
  ASSERT_TRUE(xpu::test::wait_until([&] { return occurrences("(not an XPU)") == 2; }, 5s))
      << xpud->output();
  ASSERT_TRUE(xpu::test::wait_until([&] { return occurrences("ignoring an event") == 2; }, 5s))
      << xpud->output();
  EXPECT_NE(xpud->output().find("ignoring an event: 'this is not a uevent' is not KEY=VALUE"),
            std::string::npos)
      << xpud->output();
  ASSERT_TRUE(wait_cycles(3)) << xpud->output();
  EXPECT_TRUE(added_paths().empty()) << xpud->output();
  EXPECT_TRUE(xpud->running()) << xpud->output();
}

TEST_F(XpudHotplug, WithoutAnEventSourceTheRescanFindsNewCards) {
  // A socket that cannot be created stands for a monitor that cannot be (no netlink).
  start("interval_ms = 100\nrescan_interval_ms = 1000\n",
        dir.path() / "missing-dir" / "events.sock");
  ASSERT_EQ(occurrences("no device events (cannot bind"), 1u) << xpud->output();
  EXPECT_NE(xpud->output().find("cards that come or go are found by the rescan every 1000 ms"),
            std::string::npos)
      << xpud->output();
  add_card("0000:b1:00.0", 1, 2);
  ASSERT_TRUE(xpu::test::wait_until(
      [&] { return added_paths() == std::vector<std::string>{names::device_path(2)}; }, 5s))
      << xpud->output();
  EXPECT_EQ(occurrences("no device events"), 1u) << xpud->output();
}

}  // namespace
