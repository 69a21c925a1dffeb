// Cards that appear and vanish while xpud runs (hot-plug, a VF count change) update the object
// tree through ObjectManager signals. Driven through the sysfs backend on a fake sysfs tree, the
// hardware boundary, with the real xpud on a real private bus.
#include <gtest/gtest.h>

#include <mutex>
#include <sdbus-c++/sdbus-c++.h>

#include "common/names.h"
#include "common/xpud_client.h"
#include "tests/fakes/sysfs/fake_sysfs_tree.h"
#include "tests/support/child_process.h"
#include "tests/support/private_bus.h"
#include "tests/support/wait.h"

namespace {

using namespace std::chrono_literals;
namespace names = xpu::names;

TEST(XpudHotplug, AddedAndRemovedCardsAreSignalledThroughObjectManager) {
  xpu::fakes::FakeSysfsTree tree;
  tree.add_control_node();
  // Cards as the driver publishes them: a PCI function, its /dev node and its xpuN class device,
  // which fixes the index for as long as the card is present.
  auto add_card = [&](const std::string& bus_id, int numa, unsigned index) {
    tree.add_card(xpu::fakes::kunlunxin_r_series(bus_id, 1, numa), index);
    tree.publish_class_device(bus_id, index);
  };
  add_card("0000:3b:00.0", 0, 0);
  add_card("0000:3d:00.0", 0, 1);

  xpu::test::TempDir dir;
  xpu::test::PrivateBus bus;
  xpu::test::write_file(dir.path() / "xpud.conf", "[daemon]\nbackend = sysfs\n[sampling]\ninterval_ms = 100\n[sysfs]\nroot = " +
                                                      tree.root().string() + "\n");
  xpu::test::ChildProcess xpud({xpu::test::binary_path("xpud/xpud").string(), "--bus-address", bus.address(), "--config",
                                (dir.path() / "xpud.conf").string()},
                               dir.path() / "xpud.log");
  xpu::XpudClient client(xpu::ClientOptions{bus.address(), 2s});
  ASSERT_TRUE(xpu::test::wait_until([&] { return client.list_devices().ok(); })) << xpud.output();
  ASSERT_EQ(client.list_devices()->size(), 2u);

  std::mutex mutex;
  std::vector<std::string> added, removed;
  auto connection = sdbus::createSessionBusConnectionWithAddress(bus.address());
  auto manager = sdbus::createProxy(*connection, std::string(names::kBusName), std::string(names::kManagerPath));
  manager->uponSignal("InterfacesAdded").onInterface("org.freedesktop.DBus.ObjectManager")
      .call([&](const sdbus::ObjectPath& path, const std::map<std::string, std::map<std::string, sdbus::Variant>>& ifaces) {
        std::lock_guard lock(mutex);
        if (ifaces.count(std::string(names::kDeviceInterface))) added.push_back(path);
      });
  manager->uponSignal("InterfacesRemoved").onInterface("org.freedesktop.DBus.ObjectManager")
      .call([&](const sdbus::ObjectPath& path, const std::vector<std::string>& ifaces) {
        std::lock_guard lock(mutex);
        if (std::find(ifaces.begin(), ifaces.end(), names::kDeviceInterface) != ifaces.end()) removed.push_back(path);
      });
  manager->finishRegistration();
  connection->enterEventLoopAsync();

  add_card("0000:b1:00.0", 1, 2);
  ASSERT_TRUE(xpu::test::wait_until([&] {
    std::lock_guard lock(mutex);
    return added == std::vector<std::string>{names::device_path(2)};
  }, 5s)) << xpud.output();
  auto devices = client.list_devices();
  ASSERT_TRUE(devices);
  ASSERT_EQ(devices->size(), 3u);
  EXPECT_EQ((*devices)[2].pci_bus_id, "0000:b1:00.0");
  EXPECT_EQ((*devices)[2].numa_node, 1);

  tree.remove_pci_function("0000:3d:00.0");
  tree.remove_device_node(1);
  ASSERT_TRUE(xpu::test::wait_until([&] {
    std::lock_guard lock(mutex);
    return removed == std::vector<std::string>{names::device_path(1)};
  }, 5s)) << xpud.output();
  auto manager_info = client.manager_info();
  ASSERT_TRUE(manager_info);
  EXPECT_EQ(manager_info->device_count, 2u);
  EXPECT_NE(xpud.output().find("xpu1: device removed"), std::string::npos) << xpud.output();
  connection->leaveEventLoop();
}

}  // namespace
