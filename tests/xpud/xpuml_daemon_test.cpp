// xpud on the xpuml backend, with the fake libxpuml standing in for the hardware: driver faults
// become health, a hung driver never stalls the bus or shutdown, and backend selection.
#include <signal.h>

#include <gtest/gtest.h>

#include <mutex>
#include <sdbus-c++/sdbus-c++.h>
#include <set>

#include "common/names.h"
#include "common/xpud_client.h"
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

class XpumlDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    set_scenario("devices 2\ndriver_version 5.0.21.21\ndevice 1\nstate ERROR\n");
    write_file(dir_.path() / "xpud.conf", "[daemon]\nbackend = xpuml\n[sampling]\ninterval_ms = 100\n"
               "call_timeout_ms = 300\nfailure_threshold = 2\n[xpuml]\nlibrary = " FAKE_XPUML "\n"
               "[sysfs]\nroot = " + dir_.path().string() + "\n");
  }

  // Replaced atomically, as the fake's README asks.
  void set_scenario(const std::string& text) {
    write_file(dir_.path() / "scenario.tmp", text);
    std::filesystem::rename(dir_.path() / "scenario.tmp", dir_.path() / "scenario");
  }

  void start() {
    launch();
    ASSERT_GE(notify_.wait_for("READY=1", 10s), 0) << xpud_->output();
  }

  // Starts xpud without waiting for it to be ready.
  void launch() {
    xpud_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{binary_path("xpud/xpud").string(), "--bus-address", bus_.address(), "--config",
                                 (dir_.path() / "xpud.conf").string()},
        dir_.path() / "xpud.log",
        std::map<std::string, std::string>{{"XPUML_FAKE_SCRIPT", (dir_.path() / "scenario").string()},
                                           {"NOTIFY_SOCKET", notify_.path()}});
  }

  xpu::test::TempDir dir_;
  xpu::test::PrivateBus bus_;
  xpu::test::NotifySocket notify_{dir_.path() / "notify"};
  std::unique_ptr<ChildProcess> xpud_;
};

TEST_F(XpumlDaemonTest, DriverStateBecomesHealthWithTheReason) {
  start();
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});
  auto manager = client.manager_info();
  ASSERT_TRUE(manager) << manager.error();
  EXPECT_EQ(manager->backend, "xpuml");
  EXPECT_EQ(manager->driver_version, "5.0.21.21");
  auto devices = client.list_devices();
  ASSERT_TRUE(devices) << devices.error();
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_TRUE((*devices)[0].healthy);
  EXPECT_FALSE((*devices)[1].healthy);
  EXPECT_EQ((*devices)[1].health_reason, "driver reports state ERROR (207)");
  EXPECT_GE(notify_.wait_for("STATUS=2 devices, 1 healthy, backend xpuml", 2s), 0);

  set_scenario("devices 2\ndriver_version 5.0.21.21\n");
  ASSERT_TRUE(wait_until([&] {
    auto now = client.list_devices();
    return now && (*now)[1].healthy;
  }, 5s)) << xpud_->output();
}

TEST_F(XpumlDaemonTest, HungDriverMarksCardsUnhealthyButNeverStallsTheBusOrShutdown) {
  start();
  // Every temperature read now hangs for a minute, far beyond call_timeout_ms.
  set_scenario("devices 2\ndriver_version 5.0.21.21\ndelay xpumlDeviceGetTemperature 60000\n");
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});
  ASSERT_TRUE(wait_until([&] {
    auto devices = client.list_devices();
    return devices && !(*devices)[0].healthy && !(*devices)[1].healthy;
  }, 10s)) << xpud_->output();
  auto devices = client.list_devices();
  EXPECT_NE((*devices)[0].health_reason.find("reads keep failing: "), std::string::npos)
      << (*devices)[0].health_reason;

  // The bus answers from the last snapshot at once.
  auto started = std::chrono::steady_clock::now();
  auto metrics = client.get_metrics();
  ASSERT_TRUE(metrics) << metrics.error();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 1s);

  xpud_->signal(SIGTERM);
  EXPECT_EQ(xpud_->wait(5s), 0) << xpud_->output();
}

TEST_F(XpumlDaemonTest, SigtermDuringASlowFirstSampleStopsAtOnce) {
  // The first sample cannot finish for a long while: each temperature read hangs and is given up
  // only after call_timeout_ms.
  write_file(dir_.path() / "xpud.conf", "[daemon]\nbackend = xpuml\n[sampling]\ninterval_ms = 100\n"
             "call_timeout_ms = 30000\n[xpuml]\nlibrary = " FAKE_XPUML "\n[sysfs]\nroot = " +
             dir_.path().string() + "\n");
  set_scenario("devices 2\ndriver_version 5.0.21.21\ndelay xpumlDeviceGetTemperature 60000\n");
  launch();
  ASSERT_TRUE(wait_until([&] { return xpud_->output().find("backend xpuml started") != std::string::npos; }, 10s))
      << xpud_->output();
  xpud_->signal(SIGTERM);
  EXPECT_EQ(xpud_->wait(3s), 0) << xpud_->output();
  EXPECT_NE(xpud_->output().find("stopping before the first sample"), std::string::npos) << xpud_->output();
  EXPECT_LT(notify_.wait_for("READY=1", 0s), 0) << "never ready, never served";
}

// Counts what a client on the bus sees of the cards' health: DeviceHealthChanged per device and
// Health/HealthReason PropertiesChanged per device.
class HealthSignalCounter {
 public:
  HealthSignalCounter(const std::string& address, unsigned devices)
      : connection_(sdbus::createSessionBusConnectionWithAddress(address)) {
    namespace names = xpu::names;
    manager_ = sdbus::createProxy(*connection_, std::string(names::kBusName), std::string(names::kManagerPath));
    manager_->uponSignal("DeviceHealthChanged")
        .onInterface(std::string(names::kManagerInterface))
        .call([this](const sdbus::ObjectPath& device, const std::string&, const std::string& reason) {
          std::lock_guard lock(mutex_);
          ++health_changed_[device];
          reasons_[device].insert(reason);
        });
    manager_->finishRegistration();
    for (unsigned index = 0; index < devices; ++index) {
      auto proxy = sdbus::createProxy(*connection_, std::string(names::kBusName), names::device_path(index));
      proxy->uponSignal("PropertiesChanged")
          .onInterface("org.freedesktop.DBus.Properties")
          .call([this, path = names::device_path(index)](const std::string& interface,
                                                         const std::map<std::string, sdbus::Variant>& changed,
                                                         const std::vector<std::string>&) {
            if (interface != names::kDeviceInterface) return;
            std::lock_guard lock(mutex_);
            if (changed.count("Health") || changed.count("HealthReason")) ++properties_changed_[path];
          });
      proxy->finishRegistration();
      devices_.push_back(std::move(proxy));
    }
    connection_->enterEventLoopAsync();
  }
  ~HealthSignalCounter() { connection_->leaveEventLoop(); }

  unsigned health_changed(const std::string& path) {
    std::lock_guard lock(mutex_);
    return health_changed_[path];
  }
  unsigned properties_changed(const std::string& path) {
    std::lock_guard lock(mutex_);
    return properties_changed_[path];
  }
  std::set<std::string> reasons(const std::string& path) {
    std::lock_guard lock(mutex_);
    return reasons_[path];
  }

 private:
  std::unique_ptr<sdbus::IConnection> connection_;
  std::unique_ptr<sdbus::IProxy> manager_;
  std::vector<std::unique_ptr<sdbus::IProxy>> devices_;
  std::mutex mutex_;
  std::map<std::string, unsigned> health_changed_;
  std::map<std::string, unsigned> properties_changed_;
  std::map<std::string, std::set<std::string>> reasons_;
};

// Waits until xpud has published `cycles` more samples (GetMetrics' sample time moves on once
// per sampling cycle); false if that takes longer than `timeout`.
bool wait_for_cycles(xpu::XpudClient& client, unsigned cycles, std::chrono::milliseconds timeout) {
  std::set<std::uint64_t> seen;
  return wait_until([&] {
    auto metrics = client.get_metrics();
    if (metrics) seen.insert(metrics->timestamp_usec);
    return seen.size() > cycles;
  }, timeout);
}

size_t count_lines_containing(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

TEST_F(XpumlDaemonTest, PersistentlyFailingCardSignalsOnce) {
  set_scenario("devices 2\ndriver_version 5.0.21.21\n");
  start();
  HealthSignalCounter counter(bus_.address(), 2);
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});
  // Every read call on card 1 fails from now on; card 0 is untouched.
  std::string failing = "devices 2\ndriver_version 5.0.21.21\ndevice 1\n";
  for (const char* function : {"xpumlDeviceGetState", "xpumlDeviceGetMemoryInfo", "xpumlDeviceGetUtilizationRates",
                               "xpumlDeviceGetTemperature", "xpumlDeviceGetPowerUsage", "xpumlDeviceGetClockInfo",
                               "xpumlDeviceGetComputeRunningProcesses"})
    failing += std::string("fail ") + function + " UNKNOWN\n";
  set_scenario(failing);
  const std::string card1 = xpu::names::device_path(1);
  ASSERT_TRUE(wait_until([&] { return counter.health_changed(card1) >= 1; }, 10s)) << xpud_->output();

  constexpr unsigned kCycles = 30;
  ASSERT_TRUE(wait_for_cycles(client, kCycles, 30s)) << xpud_->output();
  auto devices = client.list_devices();
  ASSERT_TRUE(devices) << devices.error();
  EXPECT_FALSE((*devices)[1].healthy);
  EXPECT_TRUE((*devices)[0].healthy);
  EXPECT_EQ(counter.health_changed(card1), 1u) << testing::PrintToString(counter.reasons(card1));
  EXPECT_EQ(counter.properties_changed(card1), 1u);
  EXPECT_EQ(counter.health_changed(xpu::names::device_path(0)), 0u);
  EXPECT_EQ(count_lines_containing(xpud_->output(), "xpu1: health: Unhealthy"), 1u) << xpud_->output();
}

TEST_F(XpumlDaemonTest, HungDriverSignalsOncePerCardWhileItStaysHung) {
  set_scenario("devices 2\ndriver_version 5.0.21.21\n");
  start();
  HealthSignalCounter counter(bus_.address(), 2);
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});
  // The first temperature read hangs for a minute: every later call finds the driver busy, for
  // longer each cycle.
  set_scenario("devices 2\ndriver_version 5.0.21.21\ndelay xpumlDeviceGetTemperature 60000\n");
  ASSERT_TRUE(wait_until([&] {
    return counter.health_changed(xpu::names::device_path(0)) >= 1 &&
           counter.health_changed(xpu::names::device_path(1)) >= 1;
  }, 10s)) << xpud_->output();

  ASSERT_TRUE(wait_for_cycles(client, 20, 30s)) << xpud_->output();
  for (unsigned index : {0u, 1u}) {
    const std::string path = xpu::names::device_path(index);
    EXPECT_EQ(counter.health_changed(path), 1u) << testing::PrintToString(counter.reasons(path));
    EXPECT_EQ(counter.properties_changed(path), 1u);
  }
  xpud_->signal(SIGTERM);
  EXPECT_EQ(xpud_->wait(5s), 0) << xpud_->output();
}

// The library's process list reaches clients with each process's pod and container, read from
// its cgroup (a fake /proc under [sysfs] root), and xpuctl shows it.
TEST_F(XpumlDaemonTest, ProcessesComeWithTheirPodAndContainer) {
  const std::string container(64, 'b');
  write_file(dir_.path() / "proc/4242/cgroup",
             "0::/kubepods.slice/kubepods-besteffort.slice/"
             "kubepods-besteffort-pod6f2b1c3a_1111_4222_8333_444455556666.slice/cri-containerd-" +
                 container + ".scope\n");
  write_file(dir_.path() / "proc/4300/cgroup", "0::/user.slice/user-1000.slice/session-2.scope\n");
  set_scenario("devices 2\ndriver_version 5.0.21.21\ndevice 0\nprocess 4242 2GiB 7\nprocess 4300 512MiB\n");
  start();
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});
  auto processes = client.get_processes();
  ASSERT_TRUE(processes) << processes.error();
  ASSERT_EQ(processes->devices.size(), 2u);
  EXPECT_EQ(processes->devices[0].index, 0u);
  ASSERT_EQ(processes->devices[0].processes.size(), 2u);
  const auto& in_pod = processes->devices[0].processes[0];
  EXPECT_EQ(in_pod.pid, 4242u);  // the host PID, not the 7 it has in its container
  EXPECT_EQ(in_pod.memory_used_bytes, std::uint64_t{2} << 30);
  EXPECT_EQ(in_pod.pod_uid, "6f2b1c3a-1111-4222-8333-444455556666");
  EXPECT_EQ(in_pod.container_id, container);
  const auto& on_host = processes->devices[0].processes[1];
  EXPECT_EQ(on_host.pid, 4300u);
  EXPECT_EQ(on_host.pod_uid, "");
  EXPECT_EQ(on_host.container_id, "");
  EXPECT_TRUE(processes->devices[1].processes.empty());

  ChildProcess xpuctl({binary_path("xpuctl/xpuctl").string(), "--bus-address", bus_.address(), "processes"},
                      dir_.path() / "xpuctl.log");
  ASSERT_EQ(xpuctl.wait(10s), 0) << xpuctl.output();
  EXPECT_NE(xpuctl.output().find("XPU  PID   MEMORY   POD-UID"), std::string::npos) << xpuctl.output();
  EXPECT_NE(xpuctl.output().find("0    4242  2048MiB  6f2b1c3a-1111-4222-8333-444455556666  bbbbbbbbbbbb"),
            std::string::npos) << xpuctl.output();
  EXPECT_NE(xpuctl.output().find("0    4300  512MiB   -"), std::string::npos) << xpuctl.output();
}

TEST_F(XpumlDaemonTest, MissingLibraryIsAClearStartupError) {
  write_file(dir_.path() / "xpud.conf", "[daemon]\nbackend = xpuml\n[xpuml]\nlibrary = " + (dir_.path() / "nope.so.1").string() + "\n");
  ChildProcess xpud({binary_path("xpud/xpud").string(), "--bus-address", bus_.address(), "--config",
                     (dir_.path() / "xpud.conf").string()},
                    dir_.path() / "missing.log");
  EXPECT_EQ(xpud.wait(10s), 1);
  EXPECT_NE(xpud.output().find("cannot start backend 'xpuml'"), std::string::npos) << xpud.output();
  EXPECT_NE(xpud.output().find("nope.so.1"), std::string::npos) << xpud.output();
}

TEST_F(XpumlDaemonTest, AutoFallsBackToSysfsWhenTheLibraryIsMissing) {
  std::filesystem::create_directories(dir_.path() / "sys/bus/pci/devices");
  write_file(dir_.path() / "xpud.conf", "[daemon]\nbackend = auto\n[xpuml]\nlibrary = " + (dir_.path() / "nope.so.1").string() +
             "\n[sysfs]\nroot = " + dir_.path().string() + "\n");
  start();
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});
  auto manager = client.manager_info();
  ASSERT_TRUE(manager) << manager.error();
  EXPECT_EQ(manager->backend, "sysfs");
  EXPECT_NE(xpud_->output().find("backend auto: xpuml unavailable"), std::string::npos) << xpud_->output();
}

}  // namespace
