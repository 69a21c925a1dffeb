// xpud as an operator and its clients see it: the real binary on a real private dbus-daemon, with
// a test-owned NOTIFY_SOCKET standing in for systemd.
#include <signal.h>

#include <gtest/gtest.h>

#include <sdbus-c++/sdbus-c++.h>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <tuple>

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
namespace names = xpu::names;

// Keeps the latest view an XpudClient watcher handed out.
class ViewRecorder {
 public:
  xpu::XpudClient::Listener listener() {
    return [this](const xpu::DeviceView& view) {
      std::lock_guard lock(mutex_);
      last_ = view;
    };
  }
  xpu::DeviceView last() const {
    std::lock_guard lock(mutex_);
    return last_;
  }

 private:
  mutable std::mutex mutex_;
  xpu::DeviceView last_;
};

class XpudTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = dir_.path() / "xpud.conf";
    xpu::test::write_file(config_, "[daemon]\nbackend = sim\n[sampling]\ninterval_ms = 200\n");
  }

  void start(std::vector<std::string> extra = {}, std::map<std::string, std::string> env = {}) {
    std::vector<std::string> argv = {binary_path("xpud/xpud").string(), "--bus-address",
                                     bus_.address(), "--config", config_.string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    env["NOTIFY_SOCKET"] = notify_.path();
    xpud_ = std::make_unique<ChildProcess>(
        argv, dir_.path() / ("xpud" + std::to_string(++runs_) + ".log"), env,
        std::vector<std::string>{}, xpud_group_);
    ASSERT_GE(notify_.wait_for("READY=1", 10s), 0) << xpud_->output();
  }

  // Rewrites the config, sends SIGHUP and expects RELOADING=1 followed by READY=1, as systemd
  // would.
  void reload_with(const std::string& config) {
    xpu::test::write_file(config_, config);
    size_t before = notify_.messages().size();
    xpud_->signal(SIGHUP);
    int reloading = notify_.wait_for("RELOADING=1", 5s, before);
    ASSERT_GE(reloading, 0);
    EXPECT_GT(notify_.wait_for("READY=1", 5s, static_cast<size_t>(reloading)), reloading);
  }

  std::unique_ptr<sdbus::IProxy> manager_proxy(sdbus::IConnection& connection) {
    return sdbus::createProxy(connection, std::string(names::kBusName),
                              std::string(names::kManagerPath));
  }

  void set_health(unsigned index, const std::string& health, const std::string& reason) {
    auto connection = sdbus::createSessionBusConnectionWithAddress(bus_.address());
    manager_proxy(*connection)
        ->callMethod("SetHealth")
        .onInterface(std::string(names::kSimulatorInterface))
        .withArguments(index, health, reason);
  }

  std::string call_error(const std::string& method,
                         std::function<void(sdbus::MethodInvoker&)> args) {
    auto connection = sdbus::createSessionBusConnectionWithAddress(bus_.address());
    try {
      auto proxy = manager_proxy(*connection);
      auto invoker = proxy->callMethod(method);
      invoker.onInterface(std::string(names::kSimulatorInterface));
      args(invoker);
      invoker.storeResultsTo();
    } catch (const sdbus::Error& e) {
      return e.getName() + ": " + e.getMessage();
    }
    return "no error";
  }

  xpu::XpudClient client() { return xpu::XpudClient(xpu::ClientOptions{bus_.address(), 2s}); }

  xpu::test::TempDir dir_;
  xpu::test::PrivateBus bus_;
  xpu::test::NotifySocket notify_{dir_.path() / "notify"};
  std::filesystem::path config_;
  std::unique_ptr<ChildProcess> xpud_;
  ChildProcess::Group xpud_group_ = ChildProcess::Group::kTest;  // kOwn for a test that stops it
  int runs_ = 0;
};

TEST_F(XpudTest, ReadyMeansNameOwnedAndEveryDeviceExported) {
  start();
  // READY=1 is sent only after the objects were exported and the name requested, so a client
  // asking right now must see the whole tree.
  xpu::XpudClient xpud(xpu::ClientOptions{bus_.address(), 2s});
  auto devices = xpud.list_devices();
  ASSERT_TRUE(devices) << devices.error();
  ASSERT_EQ(devices->size(), 8u);
  for (unsigned i = 0; i < 8; ++i) {
    EXPECT_EQ((*devices)[i].index, i);
    EXPECT_EQ((*devices)[i].name, "xpu" + std::to_string(i));
    EXPECT_TRUE((*devices)[i].healthy);
  }
  auto manager = xpud.manager_info();
  ASSERT_TRUE(manager) << manager.error();
  EXPECT_EQ(manager->backend, "sim");
  EXPECT_EQ(manager->device_count, 8u);
  EXPECT_EQ(manager->healthy_device_count, 8u);
  EXPECT_FALSE(manager->version.empty());
  EXPECT_GE(notify_.wait_for("STATUS=8 devices, 8 healthy, backend sim", 1s), 0);
}

TEST_F(XpudTest, DevicePropertiesFollowTheEightCardTopology) {
  start();
  auto devices = client().list_devices();
  ASSERT_TRUE(devices) << devices.error();
  const auto& d5 = (*devices)[5];
  EXPECT_EQ(d5.numa_node, 1);
  EXPECT_EQ(d5.pcie_root, "pci0000:80");
  EXPECT_EQ((*devices)[0].pcie_root, "pci0000:00");
  EXPECT_EQ(std::set<unsigned>(d5.linked_devices.begin(), d5.linked_devices.end()),
            (std::set<unsigned>{1, 4, 6, 7}));
  EXPECT_EQ(d5.device_nodes, (std::vector<std::string>{"/dev/xpu5", "/dev/xpuctrl"}));
  EXPECT_EQ(d5.model, "R200");
  EXPECT_EQ(d5.memory_total_bytes, 32768ull << 20);
  EXPECT_EQ(d5.health_reason, "");
}

TEST_F(XpudTest, GetMetricsServesEveryDeviceInBaseUnits) {
  start();
  auto snapshot = client().get_metrics();
  ASSERT_TRUE(snapshot) << snapshot.error();
  ASSERT_EQ(snapshot->devices.size(), 8u);
  auto now_usec = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  EXPECT_NEAR(static_cast<double>(snapshot->timestamp_usec), static_cast<double>(now_usec), 5e6);
  for (const auto& device : snapshot->devices) {
    for (const auto& [key, value] : device.values) {
      // The driver's readings, and the kernel's view of the PCIe link beside them.
      EXPECT_TRUE(std::find(names::metric::kAll.begin(), names::metric::kAll.end(), key) !=
                      names::metric::kAll.end() ||
                  std::find(names::metric::kPcie.begin(), names::metric::kPcie.end(), key) !=
                      names::metric::kPcie.end())
          << "unexpected key " << key;
    }
    EXPECT_EQ(device.values.at("pcie_link_speed_transfers_per_second"), 16e9);
    EXPECT_EQ(device.values.at("memory_total_bytes"), static_cast<double>(32768ull << 20));
    EXPECT_LE(device.values.at("utilization_ratio"), 1.0);
  }
}

TEST_F(XpudTest, HealthChangeIsSignalledAndRecovers) {
  start();
  std::mutex mutex;
  std::vector<std::tuple<std::string, std::string, std::string>> signals;
  std::vector<std::string> changed_properties;
  auto connection = sdbus::createSessionBusConnectionWithAddress(bus_.address());
  auto manager = manager_proxy(*connection);
  manager->uponSignal("DeviceHealthChanged")
      .onInterface(std::string(names::kManagerInterface))
      .call([&](const sdbus::ObjectPath& device, const std::string& health,
                const std::string& reason) {
        std::lock_guard lock(mutex);
        signals.emplace_back(device, health, reason);
      });
  manager->finishRegistration();
  auto device3 =
      sdbus::createProxy(*connection, std::string(names::kBusName), names::device_path(3));
  device3->uponSignal("PropertiesChanged")
      .onInterface("org.freedesktop.DBus.Properties")
      .call([&](const std::string& interface, const std::map<std::string, sdbus::Variant>& changed,
                const std::vector<std::string>&) {
        std::lock_guard lock(mutex);
        if (interface != names::kDeviceInterface) return;
        for (const auto& [name, value] : changed) changed_properties.push_back(name);
      });
  device3->finishRegistration();
  connection->enterEventLoopAsync();

  set_health(3, "Unhealthy", "test fault");
  ASSERT_TRUE(wait_until(
      [&] {
        std::lock_guard lock(mutex);
        return !signals.empty();
      },
      5s));
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(signals[0], std::make_tuple(names::device_path(3), std::string("Unhealthy"),
                                          std::string("test fault")));
  }
  ASSERT_TRUE(wait_until(
      [&] {
        std::lock_guard lock(mutex);
        return std::find(changed_properties.begin(), changed_properties.end(), "Health") !=
               changed_properties.end();
      },
      5s));
  auto devices = client().list_devices();
  ASSERT_TRUE(devices);
  EXPECT_FALSE((*devices)[3].healthy);
  EXPECT_EQ((*devices)[3].health_reason, "test fault");
  EXPECT_EQ((*devices)[3].health_reason_kind, "driver_fault");
  using Transitions = std::map<std::string, std::uint64_t>;
  EXPECT_EQ((*devices)[3].health_transitions, (Transitions{{"Healthy", 0}, {"Unhealthy", 1}}));
  EXPECT_EQ((*devices)[2].health_transitions, (Transitions{{"Healthy", 0}, {"Unhealthy", 0}}));
  EXPECT_GE(notify_.wait_for("STATUS=8 devices, 7 healthy, backend sim", 5s), 0);
  EXPECT_NE(xpud_->output().find("xpu3: health: Unhealthy: test fault"), std::string::npos);

  set_health(3, "Healthy", "");
  ASSERT_TRUE(wait_until(
      [&] {
        std::lock_guard lock(mutex);
        return signals.size() >= 2;
      },
      5s));
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(signals[1],
              std::make_tuple(names::device_path(3), std::string("Healthy"), std::string("")));
  }
  EXPECT_GE(notify_.wait_for("STATUS=8 devices, 8 healthy, backend sim", 5s), 0);
  devices = client().list_devices();
  ASSERT_TRUE(devices);
  EXPECT_EQ((*devices)[3].health_reason_kind, "");
  // The fault is gone and its trace stays: a client that looks only now still sees it.
  EXPECT_EQ((*devices)[3].health_transitions, (Transitions{{"Healthy", 1}, {"Unhealthy", 1}}));
  {
    std::lock_guard lock(mutex);
    EXPECT_NE(std::find(changed_properties.begin(), changed_properties.end(), "HealthTransitions"),
              changed_properties.end());
  }
  connection->leaveEventLoop();
}

TEST_F(XpudTest, WatcherSeesInjectedFaultsAndXpudComingAndGoing) {
  start();
  ViewRecorder views;  // declared before the client, whose destructor stops the watcher
  auto watcher = client();
  watcher.watch(views.listener());
  auto last = [&] { return views.last(); };
  ASSERT_TRUE(wait_until([&] { return last().xpud_present && last().devices.size() == 8; }));
  set_health(6, "Unhealthy", "lost");
  ASSERT_TRUE(wait_until([&] { return !last().devices[6].healthy; }, 5s));
  EXPECT_EQ(last().devices[6].health_reason, "lost");

  xpud_->signal(SIGTERM);
  ASSERT_EQ(xpud_->wait(10s), 0);
  ASSERT_TRUE(wait_until([&] { return !last().xpud_present; }, 5s));
  EXPECT_EQ(last().devices.size(), 8u) << "the last known cards stay listed";

  start();
  ASSERT_TRUE(wait_until(
      [&] {
        return last().xpud_present && last().devices.size() == 8 && last().devices[6].healthy;
      },
      10s));
}

TEST_F(XpudTest, WatcherReconnectsWhenTheBusRestarts) {
  start();
  ViewRecorder views;  // declared before the client, whose destructor stops the watcher
  auto watcher = client();
  watcher.watch(views.listener());
  auto last = [&] { return views.last(); };
  ASSERT_TRUE(wait_until([&] { return last().xpud_present; }));

  // The bus goes away: xpud loses its connection and exits non-zero for systemd to restart it;
  // the watcher reports xpud absent and keeps retrying.
  bus_.stop();
  EXPECT_EQ(xpud_->wait(10s), 1);
  EXPECT_NE(xpud_->output().find("lost the bus connection"), std::string::npos) << xpud_->output();
  ASSERT_TRUE(wait_until([&] { return !last().xpud_present; }, 5s));

  bus_.restart();
  start();
  ASSERT_TRUE(wait_until([&] { return last().xpud_present && last().devices.size() == 8; }, 15s));
}

// A stopped xpud keeps its bus name and sends nothing: the watcher's 30 s safety refresh was
// all that noticed it, and it counted xpud as present again only at the next one, up to 30 s
// after xpud ran again (found by the fault matrix). It reads a property of xpud every 5 s instead,
// and asks a silent one again every second.
TEST_F(XpudTest, WatcherSeesAHungXpudWithinSecondsAndItsReturnWithinOne) {
  xpud_group_ = ChildProcess::Group::kOwn;  // stopped below (ChildProcess::Group says why)
  start();
  ViewRecorder views;       // declared before the client, whose destructor stops the watcher
  auto watcher = client();  // 2 s call timeout
  watcher.watch(views.listener());
  auto last = [&] { return views.last(); };
  ASSERT_TRUE(wait_until([&] { return last().xpud_present && last().devices.size() == 8; }))
      << "the watcher never saw xpud's 8 cards";

  xpud_->signal(SIGSTOP);
  struct Resume {
    const ChildProcess& xpud;
    ~Resume() { xpud.signal(SIGCONT); }
  } resume{*xpud_};
  const auto stopped = std::chrono::steady_clock::now();
  // One probe interval (5 s) and one call timeout (2 s) by design; the deadline is what tells it
  // from the 30 s safety refresh this replaced, with room for a machine whose cores are busy
  // (10 s failed once beside two busy loops and four builds, 20 s twice in about 40 runs of the
  // default set beside busy loops and three other builds): under 30 s, it is still the probe.
  ASSERT_TRUE(wait_until([&] { return !last().xpud_present; }, 25s))
      << "xpud stopped, still counted as present after 25 s; xpud's state now: "
      << xpu::test::process_state(xpud_->pid()) << "; its output:\n"
      << xpud_->output();
  EXPECT_EQ(last().devices.size(), 8u) << "the last known cards stay listed";
  EXPECT_GE(std::chrono::steady_clock::now() - stopped, 2s)
      << "absent before a call could time out";

  xpud_->signal(SIGCONT);
  // The retry every second, plus room for a busy machine: not the 30 s safety refresh.
  ASSERT_TRUE(wait_until([&] { return last().xpud_present && last().devices.size() == 8; }, 10s))
      << "xpud resumed, still counted as absent after 10 s";
}

TEST_F(XpudTest, SimulatorErrorsAreNamedDbusErrors) {
  start();
  EXPECT_EQ(
      call_error("SetHealth",
                 [](auto& m) { m.withArguments(99u, std::string("Unhealthy"), std::string("x")); }),
      "com.kunlunxin.xpud1.Error.NoSuchDevice: no device with index 99");
  EXPECT_EQ(call_error("SetHealth",
                       [](auto& m) { m.withArguments(1u, std::string("Sick"), std::string("x")); }),
            "com.kunlunxin.xpud1.Error.InvalidArgument: health must be 'Healthy' or 'Unhealthy', "
            "got 'Sick'");
  EXPECT_EQ(
      call_error("SetMetric", [](auto& m) { m.withArguments(1u, std::string("fan_rpm"), 1.0); }),
      "com.kunlunxin.xpud1.Error.InvalidArgument: unknown metric 'fan_rpm'");
  EXPECT_EQ(
      call_error("SetMetric",
                 [](auto& m) { m.withArguments(1u, std::string("power_watts"), -3.0); }),
      "com.kunlunxin.xpud1.Error.InvalidArgument: metric value must be finite and not negative");
  // Wrong argument types are refused by the bus binding, and the daemon keeps serving.
  EXPECT_NE(call_error("SetHealth", [](auto& m) { m.withArguments(std::string("one")); }),
            "no error");
  EXPECT_TRUE(client().list_devices());
}

TEST_F(XpudTest, SetMetricPinsAValueUntilReleased) {
  start();
  auto connection = sdbus::createSessionBusConnectionWithAddress(bus_.address());
  manager_proxy(*connection)
      ->callMethod("SetMetric")
      .onInterface(std::string(names::kSimulatorInterface))
      .withArguments(2u, std::string("temperature_celsius"), 91.5);
  auto xpud = client();
  ASSERT_TRUE(wait_until(
      [&] {
        auto snapshot = xpud.get_metrics();
        return snapshot && snapshot->devices[2].values.at("temperature_celsius") == 91.5;
      },
      5s));
}

TEST_F(XpudTest, WatchdogIsFedWhileTheSamplerRuns) {
  start({}, {{"WATCHDOG_USEC", "200000"}});
  int first = notify_.wait_for("WATCHDOG=1", 2s);
  ASSERT_GE(first, 0);
  int second = notify_.wait_for("WATCHDOG=1", 2s, static_cast<size_t>(first) + 1);
  ASSERT_GT(second, first);
  EXPECT_GT(notify_.wait_for("WATCHDOG=1", 2s, static_cast<size_t>(second) + 1), second);
}

TEST_F(XpudTest, SighupReloadsTheConfiguration) {
  start();
  ASSERT_NO_FATAL_FAILURE(
      reload_with("[daemon]\nbackend = sim\nlog_level = debug\n[sampling]\ninterval_ms = 300\n"));
  EXPECT_TRUE(wait_until(
      [&] {
        return xpud_->output().find("configuration reloaded (interval 300 ms, log level debug)") !=
               std::string::npos;
      },
      5s))
      << xpud_->output();
}

TEST_F(XpudTest, BadConfigOnReloadKeepsTheRunningOne) {
  start();
  ASSERT_NO_FATAL_FAILURE(reload_with("[daemon]\nbackend = sim\nspeed = ludicrous\n"));
  EXPECT_TRUE(wait_until(
      [&] {
        return xpud_->output().find(
                   "reload failed, keeping the running configuration: " + config_.string() +
                   ":3: unknown key 'speed'") != std::string::npos;
      },
      5s))
      << xpud_->output();
  EXPECT_TRUE(client().list_devices());
}

TEST_F(XpudTest, SigtermStopsCleanly) {
  start();
  xpud_->signal(SIGTERM);
  EXPECT_EQ(xpud_->wait(10s), 0);
  EXPECT_GE(notify_.wait_for("STOPPING=1", 1s), 0);
  auto devices = client().list_devices();
  ASSERT_FALSE(devices);
  EXPECT_NE(devices.error().find("xpud is not running"), std::string::npos) << devices.error();
}

TEST_F(XpudTest, SecondInstanceCannotTakeTheName) {
  start();
  ChildProcess second({binary_path("xpud/xpud").string(), "--bus-address", bus_.address(),
                       "--backend", "sim", "--config", config_.string()},
                      dir_.path() / "second.log");
  EXPECT_EQ(second.wait(10s), 1);
  EXPECT_NE(second.output().find("cannot serve on the bus"), std::string::npos) << second.output();
  EXPECT_TRUE(client().list_devices());
}

TEST_F(XpudTest, BadConfigStopsStartUpWithFileAndLine) {
  xpu::test::write_file(config_, "[daemon]\nbackend = sim\n[sampling]\ninterval_ms = often\n");
  ChildProcess xpud({binary_path("xpud/xpud").string(), "--bus-address", bus_.address(), "--config",
                     config_.string()},
                    dir_.path() / "bad.log");
  EXPECT_EQ(xpud.wait(10s), 1);
  EXPECT_NE(xpud.output().find(config_.string() + ":4: bad value for sampling.interval_ms"),
            std::string::npos)
      << xpud.output();
}

TEST_F(XpudTest, CheckConfigValidatesAndExits) {
  ChildProcess good(
      {binary_path("xpud/xpud").string(), "--check-config", "--config", config_.string()},
      dir_.path() / "good.log");
  EXPECT_EQ(good.wait(10s), 0);
  EXPECT_NE(good.output().find("configuration OK (backend sim, interval 200 ms)"),
            std::string::npos)
      << good.output();
  xpu::test::write_file(dir_.path() / "bad.conf", "[sim]\ndevices = many\n");
  ChildProcess bad({binary_path("xpud/xpud").string(), "--check-config", "--config",
                    (dir_.path() / "bad.conf").string()},
                   dir_.path() / "bad.log");
  EXPECT_EQ(bad.wait(10s), 1);
  EXPECT_NE(bad.output().find("bad.conf:2: bad value for sim.devices"), std::string::npos)
      << bad.output();
}

// The README's configuration example, as a reader copies it: the ```ini block under
// "### Configuration".
std::string readme_configuration_example() {
  std::ifstream file(std::filesystem::path(XPU_SOURCE_DIR) / "README.md");
  std::stringstream text;
  text << file.rdbuf();
  const std::string readme = text.str();
  const std::size_t section = readme.find("\n### Configuration\n");
  if (section == std::string::npos) return {};
  const std::string fence = "\n```ini\n";
  const std::size_t start = readme.find(fence, section);
  if (start == std::string::npos) return {};
  const std::size_t end = readme.find("\n```", start + fence.size());
  if (end == std::string::npos) return {};
  return readme.substr(start + fence.size(), end + 1 - start - fence.size());
}

TEST_F(XpudTest, ReadmeConfigurationExampleChecksAsWritten) {
  const std::string example = readme_configuration_example();
  ASSERT_NE(example.find("[daemon]"), std::string::npos)
      << "no ```ini block under ### Configuration";
  xpu::test::write_file(dir_.path() / "readme.conf", example);
  ChildProcess check({binary_path("xpud/xpud").string(), "--check-config", "--config",
                      (dir_.path() / "readme.conf").string()},
                     dir_.path() / "readme.log");
  EXPECT_EQ(check.wait(10s), 0) << check.output() << "\n" << example;
  EXPECT_NE(check.output().find("configuration OK (backend auto, interval 1000 ms)"),
            std::string::npos)
      << check.output();
}

TEST_F(XpudTest, CheckConfigWithoutTheDefaultFileSaysDefaultsApply) {
  const std::string xpud = binary_path("xpud/xpud").string();
  std::vector<std::string> argv = {xpud, "--check-config"};
  if (std::filesystem::exists("/etc/xpud")) {
    // A host with xpud installed: hide its configuration in a mount namespace of our own.
    if (std::system("unshare --mount --map-root-user true >/dev/null 2>&1") != 0)
      GTEST_SKIP() << "/etc/xpud exists and no mount namespace can hide it";
    argv = {"/usr/bin/unshare",
            "--mount",
            "--map-root-user",
            "/bin/sh",
            "-c",
            "mount -t tmpfs tmpfs /etc/xpud && exec \"$0\" --check-config",
            xpud};
  }
  ChildProcess check(argv, dir_.path() / "defaults.log");
  EXPECT_EQ(check.wait(10s), 0) << check.output();
  EXPECT_EQ(check.output(),
            "/etc/xpud/xpud.conf: not found, defaults apply; configuration OK (backend auto, "
            "interval 1000 ms)\n");
}

TEST_F(XpudTest, SessionWithoutASessionBusSaysWhatToDo) {
  // What `xpud --session` meets outside a desktop session: no bus address anywhere.
  ChildProcess xpud({"/usr/bin/env", "-u", "DBUS_SESSION_BUS_ADDRESS", "-u", "XDG_RUNTIME_DIR",
                     binary_path("xpud/xpud").string(), "--session", "--config", config_.string()},
                    dir_.path() / "session.log");
  EXPECT_EQ(xpud.wait(10s), 1);
  EXPECT_NE(
      xpud.output().find("cannot connect to the session bus (neither $DBUS_SESSION_BUS_ADDRESS nor "
                         "$XDG_RUNTIME_DIR is set): run xpud inside a session (dbus-run-session -- "
                         "xpud --session) or give --bus-address ADDR"),
      std::string::npos)
      << xpud.output();
  EXPECT_EQ(xpud.output().find("ENOMEDIUM"), std::string::npos) << xpud.output();

  ChildProcess no_socket(
      {binary_path("xpud/xpud").string(), "--session", "--config", config_.string()},
      dir_.path() / "session-address.log",
      {{"DBUS_SESSION_BUS_ADDRESS", "unix:path=" + (dir_.path() / "no-bus").string()}});
  EXPECT_EQ(no_socket.wait(10s), 1);
  EXPECT_NE(no_socket.output().find("cannot connect to the session bus at unix:path=" +
                                    (dir_.path() / "no-bus").string() + ": "),
            std::string::npos)
      << no_socket.output();
}

TEST_F(XpudTest, BadFlagsExitTwoWithOneLine) {
  for (auto args : std::vector<std::vector<std::string>>{
           {"--frobnicate"}, {"--backend", "cuda"}, {"--log-level"}, {"extra"}}) {
    std::vector<std::string> argv = {binary_path("xpud/xpud").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess xpud(argv, dir_.path() / "flags.log");
    EXPECT_EQ(xpud.wait(10s), 2) << args[0];
  }
  auto lines = ChildProcess({binary_path("xpud/xpud").string(), "--backend", "cuda"},
                            dir_.path() / "one.log");
  lines.wait(10s);
  EXPECT_EQ(lines.output(),
            "xpud: --backend: 'cuda' is not one of auto, xpuml, sysfs, sim (try --help)\n");
}

}  // namespace
