// DriverVersion follows a driver reload: xpud re-reads the version with each discovery and
// emits PropertiesChanged once when it changes (never while it stays the same). Driven on the
// sysfs backend (the fake tree's /proc/xpu/version) and the xpuml backend (the fake libxpuml's
// xpumlSystemGetDriverVersion), seen by a client on a private bus.
#include <gtest/gtest.h>

#include <sdbus-c++/sdbus-c++.h>
#include <mutex>
#include <set>

#include "common/names.h"
#include "common/xpud_client.h"
#include "tests/fakes/sysfs/fake_sysfs_tree.h"
#include "tests/support/child_process.h"
#include "tests/support/notify_socket.h"
#include "tests/support/private_bus.h"
#include "tests/support/wait.h"

namespace {

using namespace std::chrono_literals;
namespace names = xpu::names;
using xpu::test::binary_path;
using xpu::test::ChildProcess;
using xpu::test::wait_until;
using xpu::test::write_file;

class DriverVersionRefresh : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    tree_.add_control_node();
    tree_.add_card(xpu::fakes::kunlunxin_r_series("0000:3b:00.0", 1, 0), 0);
    set_version("5.0.21.16");
    // A real driver reload comes with PCI unbind/bind uevents, which trigger a discovery; the
    // fake tree sends none, so the rescan (every second here) stands in for them.
    std::string config =
        "[sampling]\ninterval_ms = 100\nrescan_interval_ms = 1000\n[sysfs]\nroot = " +
        tree_.root().string() + "\n";
    if (GetParam() == "sysfs")
      config += "[daemon]\nbackend = sysfs\n";
    else
      config += "[daemon]\nbackend = xpuml\n[xpuml]\nlibrary = " FAKE_XPUML "\n";
    write_file(dir_.path() / "xpud.conf", config);
    xpud_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{binary_path("xpud/xpud").string(), "--bus-address", bus_.address(),
                                 "--config", (dir_.path() / "xpud.conf").string()},
        dir_.path() / "xpud.log",
        std::map<std::string, std::string>{
            {"XPUML_FAKE_SCRIPT", (dir_.path() / "scenario").string()},
            {"NOTIFY_SOCKET", notify_.path()}});
    ASSERT_GE(notify_.wait_for("READY=1", 10s), 0) << xpud_->output();
  }

  // What a driver reload changes: the version the kernel module (sysfs) or library reports.
  void set_version(const std::string& version) {
    if (GetParam() == "sysfs") {
      tree_.set_proc_driver_version(version + "\n");
    } else {
      // Replaced atomically, as the fake's README asks.
      write_file(dir_.path() / "scenario.tmp", "devices 1\ndriver_version " + version + "\n");
      std::filesystem::rename(dir_.path() / "scenario.tmp", dir_.path() / "scenario");
    }
  }

  std::string reported_version() {
    auto info = client_.manager_info();
    return info ? info->driver_version : "error: " + info.error();
  }

  xpu::fakes::FakeSysfsTree tree_;
  xpu::test::TempDir dir_;
  xpu::test::PrivateBus bus_;
  xpu::test::NotifySocket notify_{dir_.path() / "notify"};
  std::unique_ptr<ChildProcess> xpud_;
  xpu::XpudClient client_{xpu::ClientOptions{bus_.address(), 2s}};
};

TEST_P(DriverVersionRefresh, ADriverReloadChangesTheVersionWithOneSignal) {
  ASSERT_EQ(reported_version(), "5.0.21.16");

  std::mutex mutex;
  std::vector<std::string> signalled;  // DriverVersion values in PropertiesChanged
  auto connection = sdbus::createSessionBusConnectionWithAddress(bus_.address());
  auto manager = sdbus::createProxy(*connection, std::string(names::kBusName),
                                    std::string(names::kManagerPath));
  manager->uponSignal("PropertiesChanged")
      .onInterface("org.freedesktop.DBus.Properties")
      .call([&](const std::string& interface, const std::map<std::string, sdbus::Variant>& changed,
                const std::vector<std::string>& /*invalidated*/) {
        if (interface != names::kManagerInterface) return;
        auto version = changed.find("DriverVersion");
        if (version == changed.end()) return;
        std::lock_guard lock(mutex);
        signalled.push_back(version->second.get<std::string>());
      });
  manager->finishRegistration();
  connection->enterEventLoopAsync();

  // Two rescans with the same version: nothing to signal.
  const auto quiet_until = std::chrono::steady_clock::now() + 2500ms;
  wait_until([&] { return std::chrono::steady_clock::now() >= quiet_until; }, 3s);
  {
    std::lock_guard lock(mutex);
    EXPECT_TRUE(signalled.empty()) << signalled.front();
  }

  set_version("5.0.21.21");
  ASSERT_TRUE(wait_until(
      [&] {
        std::lock_guard lock(mutex);
        return !signalled.empty();
      },
      5s))
      << xpud_->output();
  EXPECT_EQ(reported_version(), "5.0.21.21");
  // And no more after it, over two more rescans.
  const auto settled_until = std::chrono::steady_clock::now() + 2500ms;
  wait_until([&] { return std::chrono::steady_clock::now() >= settled_until; }, 3s);
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(signalled, std::vector<std::string>{"5.0.21.21"});
  }
  EXPECT_NE(xpud_->output().find("driver version changed from 5.0.21.16 to 5.0.21.21"),
            std::string::npos)
      << xpud_->output();
  connection->leaveEventLoop();
}

// The properties xpud's running objects declare constant (the XML's EmitsChangedSignal "const",
// carried through the generated adaptors into introspection): exactly those that never change.
std::set<std::string> const_properties(sdbus::IConnection& connection, const std::string& path) {
  auto proxy = sdbus::createProxy(connection, std::string(names::kBusName), path);
  std::string xml;
  proxy->callMethod("Introspect")
      .onInterface("org.freedesktop.DBus.Introspectable")
      .storeResultsTo(xml);
  std::set<std::string> found;
  for (auto at = xml.find("<property name=\""); at != std::string::npos;
       at = xml.find("<property name=\"", at + 1)) {
    const auto name_start = at + 16;
    const std::string name = xml.substr(name_start, xml.find('"', name_start) - name_start);
    const auto end = xml.find("</property>", at);
    const auto self_closing = xml.find("/>", at);
    if (end == std::string::npos || self_closing < xml.find('>', at) + 1) continue;
    if (xml.substr(at, end - at).find("EmitsChangedSignal\" value=\"const\"") != std::string::npos)
      found.insert(name);
  }
  return found;
}

TEST_P(DriverVersionRefresh, OnlyPropertiesThatNeverChangeAreDeclaredConstant) {
  auto connection = sdbus::createSessionBusConnectionWithAddress(bus_.address());
  EXPECT_EQ(const_properties(*connection, std::string(names::kManagerPath)),
            std::set<std::string>{"Version"});
  EXPECT_EQ(
      const_properties(*connection, names::device_path(0)),
      (std::set<std::string>{"Index", "Name", "Uuid", "Serial", "Model", "PciBusId", "PcieRoot",
                             "NumaNode", "MemoryTotalBytes", "DeviceNodes", "LinkedDevices",
                             "IsVirtualFunction", "SriovEnabled", "PhysicalFunction"}));
}

INSTANTIATE_TEST_SUITE_P(Backends, DriverVersionRefresh, ::testing::Values("sysfs", "xpuml"),
                         [](const auto& info) { return info.param; });

}  // namespace
