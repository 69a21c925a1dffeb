// xpud on the xpuml backend, with the fake libxpuml standing in for the hardware: driver faults
// become health, a hung driver never stalls the bus or shutdown, and backend selection.
#include <signal.h>

#include <gtest/gtest.h>

#include <sdbus-c++/sdbus-c++.h>
#include <algorithm>
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
using xpu::test::binary_path;
using xpu::test::ChildProcess;
using xpu::test::wait_until;
using xpu::test::write_file;

class XpumlDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    set_scenario("devices 2\ndriver_version 5.0.21.21\ndevice 1\nstate ERROR\n");
    write_file(dir_.path() / "xpud.conf",
               "[daemon]\nbackend = xpuml\n[sampling]\ninterval_ms = 100\n"
               "call_timeout_ms = 300\nfailure_threshold = 2\nstall_grace_ms = "
               "1000\n[xpuml]\nlibrary = " FAKE_XPUML
               "\n"
               "[sysfs]\nroot = " +
                   dir_.path().string() + "\n");
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
  void launch(std::map<std::string, std::string> extra_env = {}) {
    std::map<std::string, std::string> env{
        {"XPUML_FAKE_SCRIPT", (dir_.path() / "scenario").string()},
        {"NOTIFY_SOCKET", notify_.path()}};
    env.merge(extra_env);
    xpud_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{binary_path("xpud/xpud").string(), "--bus-address", bus_.address(),
                                 "--config", (dir_.path() / "xpud.conf").string()},
        dir_.path() / "xpud.log", env);
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
  ASSERT_TRUE(wait_until(
      [&] {
        auto now = client.list_devices();
        return now && (*now)[1].healthy;
      },
      5s))
      << xpud_->output();
}

TEST_F(XpumlDaemonTest, HungDriverMarksCardsUnhealthyPastTheGraceButNeverStallsTheBusOrShutdown) {
  start();
  // Every temperature read now hangs for a minute, far beyond call_timeout_ms.
  set_scenario("devices 2\ndriver_version 5.0.21.21\ndelay xpumlDeviceGetTemperature 60000\n");
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});
  ASSERT_TRUE(wait_until(
      [&] {
        auto devices = client.list_devices();
        return devices && !(*devices)[0].healthy && !(*devices)[1].healthy;
      },
      10s))
      << xpud_->output();
  auto devices = client.list_devices();
  for (const auto& device : *devices) {
    EXPECT_EQ(device.health_reason, "driver stalled");
    EXPECT_EQ(device.health_reason_kind, "driver_stalled");
  }

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
  write_file(dir_.path() / "xpud.conf",
             "[daemon]\nbackend = xpuml\n[sampling]\ninterval_ms = 100\n"
             "call_timeout_ms = 30000\n[xpuml]\nlibrary = " FAKE_XPUML "\n[sysfs]\nroot = " +
                 dir_.path().string() + "\n");
  set_scenario("devices 2\ndriver_version 5.0.21.21\ndelay xpumlDeviceGetTemperature 60000\n");
  launch();
  ASSERT_TRUE(wait_until(
      [&] { return xpud_->output().find("backend xpuml started") != std::string::npos; }, 10s))
      << xpud_->output();
  xpud_->signal(SIGTERM);
  EXPECT_EQ(xpud_->wait(3s), 0) << xpud_->output();
  EXPECT_NE(xpud_->output().find("stopping before the first sample"), std::string::npos)
      << xpud_->output();
  EXPECT_LT(notify_.wait_for("READY=1", 0s), 0) << "never ready, never served";
}

// Counts what a client on the bus sees of the cards' health: DeviceHealthChanged per device and
// Health/HealthReason PropertiesChanged per device.
class HealthSignalCounter {
 public:
  HealthSignalCounter(const std::string& address, unsigned devices)
      : connection_(sdbus::createSessionBusConnectionWithAddress(address)) {
    namespace names = xpu::names;
    manager_ = sdbus::createProxy(*connection_, std::string(names::kBusName),
                                  std::string(names::kManagerPath));
    manager_->uponSignal("DeviceHealthChanged")
        .onInterface(std::string(names::kManagerInterface))
        .call(
            [this](const sdbus::ObjectPath& device, const std::string&, const std::string& reason) {
              std::lock_guard lock(mutex_);
              ++health_changed_[device];
              reasons_[device].insert(reason);
            });
    manager_->finishRegistration();
    for (unsigned index = 0; index < devices; ++index) {
      auto proxy =
          sdbus::createProxy(*connection_, std::string(names::kBusName), names::device_path(index));
      proxy->uponSignal("PropertiesChanged")
          .onInterface("org.freedesktop.DBus.Properties")
          .call([this, path = names::device_path(index)](
                    const std::string& interface,
                    const std::map<std::string, sdbus::Variant>& changed,
                    const std::vector<std::string>&) {
            if (interface != names::kDeviceInterface) return;
            std::lock_guard lock(mutex_);
            if (changed.count("Health") || changed.count("HealthReason"))
              ++properties_changed_[path];
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
  return wait_until(
      [&] {
        auto metrics = client.get_metrics();
        if (metrics) seen.insert(metrics->timestamp_usec);
        return seen.size() > cycles;
      },
      timeout);
}

size_t count_lines_containing(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++count;
  return count;
}

TEST_F(XpumlDaemonTest, PersistentlyFailingCardSignalsOnce) {
  set_scenario("devices 2\ndriver_version 5.0.21.21\n");
  start();
  HealthSignalCounter counter(bus_.address(), 2);
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});
  // Every read call on card 1 fails from now on; card 0 is untouched.
  std::string failing = "devices 2\ndriver_version 5.0.21.21\ndevice 1\n";
  for (const char* function :
       {"xpumlDeviceGetState", "xpumlDeviceGetMemoryInfo", "xpumlDeviceGetUtilizationRates",
        "xpumlDeviceGetTemperature", "xpumlDeviceGetPowerUsage", "xpumlDeviceGetClockInfo",
        "xpumlDeviceGetComputeRunningProcesses"})
    failing += std::string("fail ") + function + " UNKNOWN\n";
  set_scenario(failing);
  const std::string card1 = xpu::names::device_path(1);
  ASSERT_TRUE(wait_until([&] { return counter.health_changed(card1) >= 1; }, 10s))
      << xpud_->output();

  constexpr unsigned kCycles = 30;
  ASSERT_TRUE(wait_for_cycles(client, kCycles, 30s)) << xpud_->output();
  auto devices = client.list_devices();
  ASSERT_TRUE(devices) << devices.error();
  EXPECT_FALSE((*devices)[1].healthy);
  EXPECT_TRUE((*devices)[0].healthy);
  EXPECT_EQ(counter.health_changed(card1), 1u) << testing::PrintToString(counter.reasons(card1));
  EXPECT_EQ(counter.properties_changed(card1), 1u);
  EXPECT_EQ(counter.health_changed(xpu::names::device_path(0)), 0u);
  EXPECT_EQ(count_lines_containing(xpud_->output(), "xpu1: health: Unhealthy"), 1u)
      << xpud_->output();
}

TEST_F(XpumlDaemonTest, HungDriverSignalsOncePerCardWhileItStaysHung) {
  set_scenario("devices 2\ndriver_version 5.0.21.21\n");
  start();
  HealthSignalCounter counter(bus_.address(), 2);
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});
  // The first temperature read hangs for a minute: every later call finds the driver busy, for
  // longer each cycle.
  set_scenario("devices 2\ndriver_version 5.0.21.21\ndelay xpumlDeviceGetTemperature 60000\n");
  ASSERT_TRUE(wait_until(
      [&] {
        return counter.health_changed(xpu::names::device_path(0)) >= 1 &&
               counter.health_changed(xpu::names::device_path(1)) >= 1;
      },
      10s))
      << xpud_->output();

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
  set_scenario(
      "devices 2\ndriver_version 5.0.21.21\ndevice 0\nprocess 4242 2GiB 7\nprocess 4300 512MiB\n");
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

  ChildProcess xpuctl(
      {binary_path("xpuctl/xpuctl").string(), "--bus-address", bus_.address(), "processes"},
      dir_.path() / "xpuctl.log");
  ASSERT_EQ(xpuctl.wait(10s), 0) << xpuctl.output();
  EXPECT_NE(xpuctl.output().find("XPU  PID   MEMORY   POD-UID"), std::string::npos)
      << xpuctl.output();
  EXPECT_NE(xpuctl.output().find(
                "0    4242  2048MiB  6f2b1c3a-1111-4222-8333-444455556666  bbbbbbbbbbbb"),
            std::string::npos)
      << xpuctl.output();
  EXPECT_NE(xpuctl.output().find("0    4300  512MiB   -"), std::string::npos) << xpuctl.output();
}

TEST_F(XpumlDaemonTest, MissingLibraryIsAClearStartupError) {
  write_file(dir_.path() / "xpud.conf", "[daemon]\nbackend = xpuml\n[xpuml]\nlibrary = " +
                                            (dir_.path() / "nope.so.1").string() + "\n");
  ChildProcess xpud({binary_path("xpud/xpud").string(), "--bus-address", bus_.address(), "--config",
                     (dir_.path() / "xpud.conf").string()},
                    dir_.path() / "missing.log");
  EXPECT_EQ(xpud.wait(10s), 1);
  EXPECT_NE(xpud.output().find("cannot start backend 'xpuml'"), std::string::npos) << xpud.output();
  EXPECT_NE(xpud.output().find("nope.so.1"), std::string::npos) << xpud.output();
}

TEST_F(XpumlDaemonTest, AutoFallsBackToSysfsWhenTheLibraryIsMissing) {
  std::filesystem::create_directories(dir_.path() / "sys/bus/pci/devices");
  write_file(dir_.path() / "xpud.conf", "[daemon]\nbackend = auto\n[xpuml]\nlibrary = " +
                                            (dir_.path() / "nope.so.1").string() +
                                            "\n[sysfs]\nroot = " + dir_.path().string() + "\n");
  start();
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});
  auto manager = client.manager_info();
  ASSERT_TRUE(manager) << manager.error();
  EXPECT_EQ(manager->backend, "sysfs");
  EXPECT_NE(xpud_->output().find("backend auto: xpuml unavailable"), std::string::npos)
      << xpud_->output();
}

// Reads the Manager's properties and counts its PropertiesChanged by property name.
class ManagerProperties {
 public:
  explicit ManagerProperties(const std::string& address)
      : signals_(sdbus::createSessionBusConnectionWithAddress(address)),
        calls_(sdbus::createSessionBusConnectionWithAddress(address)) {
    namespace names = xpu::names;
    watcher_ = sdbus::createProxy(*signals_, std::string(names::kBusName),
                                  std::string(names::kManagerPath));
    watcher_->uponSignal("PropertiesChanged")
        .onInterface("org.freedesktop.DBus.Properties")
        .call([this](const std::string& interface,
                     const std::map<std::string, sdbus::Variant>& changed,
                     const std::vector<std::string>& invalidated) {
          if (interface != names::kManagerInterface) return;
          std::lock_guard lock(mutex_);
          for (const auto& [name, value] : changed) ++changes_[name];
          for (const auto& name : invalidated) ++changes_[name];
        });
    watcher_->finishRegistration();
    signals_->enterEventLoopAsync();
    reader_ =
        sdbus::createProxy(*calls_, std::string(names::kBusName), std::string(names::kManagerPath));
  }
  ~ManagerProperties() { signals_->leaveEventLoop(); }

  bool driver_stalled() {
    return reader_->getProperty("DriverStalled")
        .onInterface(std::string(xpu::names::kManagerInterface))
        .get<bool>();
  }
  unsigned changes(const std::string& property) {
    std::lock_guard lock(mutex_);
    return changes_[property];
  }

 private:
  std::unique_ptr<sdbus::IConnection> signals_;
  std::unique_ptr<sdbus::IConnection> calls_;
  std::unique_ptr<sdbus::IProxy> watcher_;
  std::unique_ptr<sdbus::IProxy> reader_;
  std::mutex mutex_;
  std::map<std::string, unsigned> changes_;
};

bool all_metrics_absent(xpu::XpudClient& client) {
  auto metrics = client.get_metrics();
  if (!metrics || metrics->devices.empty()) return false;
  for (const auto& device : metrics->devices)
    if (!device.values.empty()) return false;
  return true;
}

bool all_metrics_present(xpu::XpudClient& client) {
  auto metrics = client.get_metrics();
  if (!metrics || metrics->devices.empty()) return false;
  for (const auto& device : metrics->devices)
    if (!device.values.count(std::string(xpu::names::metric::kTemperature))) return false;
  return true;
}

TEST_F(XpumlDaemonTest, StallShorterThanTheGraceKeepsCardsHealthyWithoutMetrics) {
  write_file(dir_.path() / "xpud.conf",
             "[daemon]\nbackend = xpuml\n[sampling]\ninterval_ms = 100\n"
             "call_timeout_ms = 300\nfailure_threshold = 2\nstall_grace_ms = "
             "5000\n[xpuml]\nlibrary = " FAKE_XPUML "\n[sysfs]\nroot = " +
                 dir_.path().string() + "\n");
  const std::string normal = "devices 2\ndriver_version 5.0.21.21\n";
  set_scenario(normal);
  start();
  HealthSignalCounter counter(bus_.address(), 2);
  ManagerProperties manager(bus_.address());
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});
  ASSERT_TRUE(wait_until([&] { return all_metrics_present(client); }, 5s)) << xpud_->output();
  EXPECT_FALSE(manager.driver_stalled());

  // One temperature read hangs for 2.5 s, then the driver is fine again.
  set_scenario(normal + "delay xpumlDeviceGetTemperature 2500\n");
  ASSERT_TRUE(wait_until([&] { return manager.driver_stalled(); }, 5s)) << xpud_->output();
  set_scenario(normal);
  EXPECT_TRUE(all_metrics_absent(client));
  auto devices = client.list_devices();
  ASSERT_TRUE(devices) << devices.error();
  EXPECT_TRUE((*devices)[0].healthy && (*devices)[1].healthy) << (*devices)[0].health_reason;
  EXPECT_GE(notify_.wait_for("STATUS=2 devices, 2 healthy, backend xpuml, driver stalled", 2s), 0);

  ASSERT_TRUE(wait_until([&] { return !manager.driver_stalled(); }, 10s)) << xpud_->output();
  ASSERT_TRUE(wait_until([&] { return all_metrics_present(client); }, 5s)) << xpud_->output();
  devices = client.list_devices();
  ASSERT_TRUE(devices) << devices.error();
  EXPECT_TRUE((*devices)[0].healthy && (*devices)[1].healthy);
  EXPECT_EQ(counter.health_changed(xpu::names::device_path(0)), 0u);
  EXPECT_EQ(counter.health_changed(xpu::names::device_path(1)), 0u);
  EXPECT_TRUE(wait_until([&] { return manager.changes("DriverStalled") >= 2; }, 2s));
  EXPECT_NE(xpud_->output().find("driver stalled: 'read xpu0' has not returned"), std::string::npos)
      << xpud_->output();
  EXPECT_NE(xpud_->output().find("driver responds again"), std::string::npos) << xpud_->output();
}

TEST_F(XpumlDaemonTest, StallPastTheGraceTurnsCardsUnhealthyDriverStalledUntilItEnds) {
  const std::string normal = "devices 2\ndriver_version 5.0.21.21\n";
  set_scenario(normal);
  start();  // stall_grace_ms = 1000
  HealthSignalCounter counter(bus_.address(), 2);
  ManagerProperties manager(bus_.address());
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});

  set_scenario(normal + "delay xpumlDeviceGetTemperature 4000\n");
  ASSERT_TRUE(wait_until(
      [&] {
        auto devices = client.list_devices();
        return devices && !(*devices)[0].healthy && !(*devices)[1].healthy;
      },
      10s))
      << xpud_->output();
  set_scenario(normal);
  auto devices = client.list_devices();
  ASSERT_TRUE(devices) << devices.error();
  for (const auto& device : *devices) {
    EXPECT_EQ(device.health_reason, "driver stalled");
    EXPECT_EQ(device.health_reason_kind, "driver_stalled");
  }
  EXPECT_TRUE(manager.driver_stalled());
  EXPECT_GE(notify_.wait_for("STATUS=2 devices, 0 healthy, backend xpuml, driver stalled", 2s), 0);

  // The hung call returns (4 s after it started): back to normal.
  ASSERT_TRUE(wait_until(
      [&] {
        auto now = client.list_devices();
        return now && (*now)[0].healthy && (*now)[1].healthy;
      },
      10s))
      << xpud_->output();
  EXPECT_FALSE(manager.driver_stalled());
  EXPECT_TRUE(wait_until([&] { return all_metrics_present(client); }, 5s));
  EXPECT_GE(notify_.wait_for("STATUS=2 devices, 2 healthy, backend xpuml", 2s), 0);
  // The signals come on the counter's own connection and thread, so the count may trail the call
  // that already saw the cards healthy (a CI failure: 1 of 2 counted on a loaded machine).
  const auto both_signalled = [&] {
    return counter.health_changed(xpu::names::device_path(0)) >= 2 &&
           counter.health_changed(xpu::names::device_path(1)) >= 2;
  };
  EXPECT_TRUE(wait_until(both_signalled, 5s));
  for (unsigned index : {0u, 1u}) {
    const std::string path = xpu::names::device_path(index);
    EXPECT_EQ(counter.health_changed(path), 2u) << testing::PrintToString(counter.reasons(path));
  }
}

TEST_F(XpumlDaemonTest, SlowButAliveDriverWithEightCardsKeepsTheWatchdogFed) {
  // Every read takes 1.6 s of a 2.5 s call timeout: a cycle over 8 cards lasts more than 12 s,
  // longer than interval + 2 x call_timeout + 5 s (10.1 s, the allowance before it counted
  // cards). The 0.9 s between the read and its timeout is room for busy cores: with 1.3 s of
  // 1.5 s, a read that a loaded machine delayed past the timeout stalled the driver and cut the
  // cycle short (the cycles then came too fast for the check below).
  write_file(dir_.path() / "xpud.conf",
             "[daemon]\nbackend = xpuml\n[sampling]\ninterval_ms = 100\n"
             "call_timeout_ms = 2500\n[xpuml]\nlibrary = " FAKE_XPUML "\n[sysfs]\nroot = " +
                 dir_.path().string() + "\n");
  set_scenario("devices 8\ndriver_version 5.0.21.21\ndelay xpumlDeviceGetState 1600\n");
  launch({{"WATCHDOG_USEC", "2000000"}});
  const int ready = notify_.wait_for("READY=1", 30s);
  ASSERT_GE(ready, 0) << xpud_->output();
  const auto started = std::chrono::steady_clock::now();
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});
  // Two more full cycles, each well past the old allowance. The notify socket is drained all
  // along: a full datagram queue (max_dgram_qlen, often 10) would block xpud's sd_notify.
  std::set<std::uint64_t> cycles;
  ASSERT_TRUE(wait_until(
      [&] {
        notify_.poll();
        auto metrics = client.get_metrics();
        if (metrics) cycles.insert(metrics->timestamp_usec);
        return cycles.size() > 2;
      },
      60s))
      << xpud_->output();
  const auto watched = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  EXPECT_GT(watched, 16s);
  EXPECT_TRUE(xpud_->running());
  EXPECT_EQ(xpud_->output().find("not feeding the watchdog"), std::string::npos) << xpud_->output();
  // Pinged every second (half of WATCHDOG_USEC) the whole time.
  notify_.poll();
  const auto messages = notify_.messages();
  const auto pings =
      std::count(messages.begin() + ready, messages.end(), std::string("WATCHDOG=1"));
  EXPECT_GE(pings, watched / 1s - 2) << pings << " pings in " << watched.count() << " ms";
  auto devices = client.list_devices();
  ASSERT_TRUE(devices) << devices.error();
  EXPECT_EQ(devices->size(), 8u);
  for (const auto& device : *devices)
    EXPECT_TRUE(device.healthy) << device.name << ": " << device.health_reason;
}

TEST_F(XpumlDaemonTest, AutoMovesFromSysfsToXpumlWhenTheDriverArrivesWithoutRenamingCards) {
  // The same two R200s as the fake library's defaults (bus 3b and 3c), seen through sysfs.
  xpu::fakes::FakeSysfsTree tree;
  tree.add_card(xpu::fakes::kunlunxin_r_series("0000:3b:00.0", 1), 0);
  tree.add_card(xpu::fakes::kunlunxin_r_series("0000:3c:00.0", 1), 1);
  tree.add_control_node();
  write_file(dir_.path() / "xpud.conf",
             "[daemon]\nbackend = auto\n[sampling]\ninterval_ms = 100\n"
             "call_timeout_ms = 300\n[xpuml]\nlibrary = " FAKE_XPUML "\n[sysfs]\nroot = " +
                 tree.root().string() + "\n");
  // The library loads, but the kunlun module is not there yet. Once it is, the library names
  // the cards with its own UUIDs (fa4e0000-...), not the ids sysfs derives.
  set_scenario("fail xpumlInit DRIVER_NOT_LOADED\ndevices 2\n");
  start();
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});
  ManagerProperties manager(bus_.address());
  auto info = client.manager_info();
  ASSERT_TRUE(info) << info.error();
  EXPECT_EQ(info->backend, "sysfs");
  EXPECT_NE(xpud_->output().find("libxpuml cannot initialise"), std::string::npos)
      << xpud_->output();
  EXPECT_NE(xpud_->output().find("DRIVER_NOT_LOADED"), std::string::npos) << xpud_->output();
  auto before = client.list_devices();
  ASSERT_TRUE(before) << before.error();
  ASSERT_EQ(before->size(), 2u);

  set_scenario("devices 2\n");
  ASSERT_TRUE(wait_until(
      [&] {
        auto now = client.manager_info();
        return now && now->backend == "xpuml";
      },
      15s))
      << xpud_->output();
  EXPECT_TRUE(wait_until([&] { return manager.changes("Backend") == 1; }, 2s));
  // Metrics come from the library now, for the cards under their old ids.
  ASSERT_TRUE(wait_until([&] { return all_metrics_present(client); }, 5s)) << xpud_->output();
  auto after = client.list_devices();
  ASSERT_TRUE(after) << after.error();
  ASSERT_EQ(after->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*after)[i].index, (*before)[i].index);
    EXPECT_EQ((*after)[i].uuid, (*before)[i].uuid);
    EXPECT_TRUE((*after)[i].healthy) << (*after)[i].health_reason;
  }
  EXPECT_EQ((*after)[0].serial, "02K00FAKE0000");  // the library's view
  EXPECT_GE(notify_.wait_for("STATUS=2 devices, 2 healthy, backend xpuml", 2s), 0);
}

}  // namespace
