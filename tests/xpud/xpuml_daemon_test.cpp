// xpud on the xpuml backend, with the fake libxpuml standing in for the hardware: driver faults
// become health, a hung driver never stalls the bus or shutdown, and backend selection.
#include <signal.h>

#include <gtest/gtest.h>

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
    xpud_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{binary_path("xpud/xpud").string(), "--bus-address", bus_.address(), "--config",
                                 (dir_.path() / "xpud.conf").string()},
        dir_.path() / "xpud.log",
        std::map<std::string, std::string>{{"XPUML_FAKE_SCRIPT", (dir_.path() / "scenario").string()},
                                           {"NOTIFY_SOCKET", notify_.path()}});
    ASSERT_GE(notify_.wait_for("READY=1", 10s), 0) << xpud_->output();
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
  EXPECT_NE((*devices)[0].health_reason.find("consecutive failed reads"), std::string::npos)
      << (*devices)[0].health_reason;

  // The bus answers from the last snapshot at once.
  auto started = std::chrono::steady_clock::now();
  auto metrics = client.get_metrics();
  ASSERT_TRUE(metrics) << metrics.error();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 1s);

  xpud_->signal(SIGTERM);
  EXPECT_EQ(xpud_->wait(5s), 0) << xpud_->output();
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
