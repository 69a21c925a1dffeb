// xpuctl as an operator runs it, against the real xpud on a private bus.
#include <gtest/gtest.h>

#include "tests/support/child_process.h"
#include "tests/support/private_bus.h"
#include "tests/support/wait.h"

namespace {

using namespace std::chrono_literals;
using xpu::test::binary_path;
using xpu::test::ChildProcess;

class XpuctlTest : public ::testing::Test {
 protected:
  std::pair<int, std::string> xpuctl(std::vector<std::string> args) {
    std::vector<std::string> argv = {binary_path("xpuctl/xpuctl").string(), "--bus-address",
                                     bus_.address()};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess process(argv, dir_.path() / ("xpuctl" + std::to_string(++runs_) + ".log"));
    auto status = process.wait(10s);
    return {status.value_or(-1), process.output()};
  }

  void start_xpud(const std::string& extra_config = "") {
    xpu::test::write_file(dir_.path() / "xpud.conf", "[daemon]\nbackend = sim\n" + extra_config);
    xpud_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{binary_path("xpud/xpud").string(), "--bus-address", bus_.address(),
                                 "--config", (dir_.path() / "xpud.conf").string()},
        dir_.path() / "xpud.log");
    ASSERT_TRUE(xpu::test::wait_until([&] { return xpuctl({"list"}).first == 0; }, 10s))
        << xpud_->output();
  }

  xpu::test::TempDir dir_;
  xpu::test::PrivateBus bus_;
  std::unique_ptr<ChildProcess> xpud_;
  int runs_ = 0;
};

TEST_F(XpuctlTest, ClearErrorWhenXpudIsNotRunning) {
  auto [status, output] = xpuctl({"list"});
  EXPECT_EQ(status, 1);
  EXPECT_EQ(output, "xpuctl: xpud is not running (com.kunlunxin.xpud1 has no owner on the bus at " +
                        bus_.address() + ")\n");
}

TEST_F(XpuctlTest, NoBusNamesTheAddressTriedAndWhereToLook) {
  // The system bus as an operator's xpuctl reaches it, at an address where nothing listens.
  const std::string address = "unix:path=" + (dir_.path() / "no-system-bus").string();
  ChildProcess system({binary_path("xpuctl/xpuctl").string(), "list"}, dir_.path() / "system.log",
                      {{"DBUS_SYSTEM_BUS_ADDRESS", address}});
  EXPECT_EQ(system.wait(10s), 1);
  EXPECT_EQ(system.output(),
            "xpuctl: cannot connect to the system bus at " + address +
                ": Failed to open bus (No such file or directory); xpud may not be running "
                "(systemctl status xpud), or it serves another bus (--bus-address ADDR)\n");

  const std::string given = "unix:path=" + (dir_.path() / "no-private-bus").string();
  ChildProcess private_bus({binary_path("xpuctl/xpuctl").string(), "--bus-address", given, "list"},
                           dir_.path() / "private.log");
  EXPECT_EQ(private_bus.wait(10s), 1);
  EXPECT_EQ(private_bus.output(),
            "xpuctl: cannot connect to the bus at " + given +
                ": Failed to open bus (No such file or directory); is a bus running "
                "there, with xpud on it (xpud --bus-address " +
                given + ")?\n");
}

TEST_F(XpuctlTest, ListShowsOneRowPerCard) {
  start_xpud();
  auto [status, output] = xpuctl({"list"});
  ASSERT_EQ(status, 0) << output;
  EXPECT_NE(output.find("backend sim"), std::string::npos) << output;
  EXPECT_NE(output.find("8 devices, 8 healthy"), std::string::npos) << output;
  EXPECT_NE(output.find("XPU  MODEL"), std::string::npos) << output;
  EXPECT_NE(output.find("PCI BUS ID    PCIE ROOT   NUMA"), std::string::npos) << output;
  EXPECT_NE(output.find("0000:80:00.0  pci0000:80  1"), std::string::npos) << output;
  for (int i = 0; i < 8; ++i)
    EXPECT_NE(output.find("\n" + std::to_string(i) + "    R200"), std::string::npos) << output;
}

TEST_F(XpuctlTest, JsonOutputsAreMachineReadable) {
  start_xpud();
  auto [status, output] = xpuctl({"list", "--json"});
  ASSERT_EQ(status, 0) << output;
  EXPECT_EQ(output.front(), '{');
  EXPECT_NE(output.find("\"backend\":\"sim\""), std::string::npos);
  EXPECT_NE(output.find("\"device_count\":8"), std::string::npos);
  EXPECT_NE(output.find("\"device_nodes\":[\"/dev/xpu7\",\"/dev/xpuctrl\"]"), std::string::npos)
      << output;
  auto [mstatus, metrics] = xpuctl({"metrics", "--json"});
  ASSERT_EQ(mstatus, 0) << metrics;
  EXPECT_NE(metrics.find("\"memory_total_bytes\":34359738368"), std::string::npos) << metrics;
  auto [sstatus, show] = xpuctl({"show", "4", "--json"});
  ASSERT_EQ(sstatus, 0) << show;
  EXPECT_NE(show.find("\"name\":\"xpu4\""), std::string::npos) << show;
  EXPECT_NE(show.find("\"numa_node\":1"), std::string::npos) << show;
  EXPECT_NE(show.find("\"pcie_root\":\"pci0000:80\""), std::string::npos) << show;
}

TEST_F(XpuctlTest, ShowAndMetricsTables) {
  start_xpud();
  auto [status, show] = xpuctl({"show", "3"});
  ASSERT_EQ(status, 0) << show;
  EXPECT_NE(show.find("Name                xpu3"), std::string::npos) << show;
  EXPECT_NE(show.find("Linked devices      0,1,2,7"), std::string::npos) << show;
  EXPECT_NE(show.find("PCIe root           pci0000:00"), std::string::npos) << show;
  auto [mstatus, metrics] = xpuctl({"metrics"});
  ASSERT_EQ(mstatus, 0) << metrics;
  EXPECT_NE(metrics.find("MEMORY-USAGE"), std::string::npos);
  EXPECT_NE(metrics.find("/ 32768MiB"), std::string::npos) << metrics;
}

// The sim's SetMetric injects PCIe figures as the kernel would report them; `xpuctl show` tells
// them and what xpud makes of them.
TEST_F(XpuctlTest, ShowTellsThePcieLinkItsErrorsAndWarnings) {
  start_xpud();
  auto pin = [&](const char* key, const char* value) {
    ChildProcess busctl({"/usr/bin/busctl", "--address=" + bus_.address(), "call",
                         "com.kunlunxin.xpud1", "/com/kunlunxin/xpud1",
                         "com.kunlunxin.xpud1.Simulator", "SetMetric", "usd", "3", key, value},
                        dir_.path() / ("busctl" + std::to_string(++runs_) + ".log"));
    ASSERT_EQ(busctl.wait(10s), 0) << busctl.output();
  };
  auto [status, show] = xpuctl({"show", "3"});
  ASSERT_EQ(status, 0) << show;
  EXPECT_NE(show.find("PCIe link           16.0 GT/s x16 (can do 16.0 GT/s x16)\n"),
            std::string::npos)
      << show;
  EXPECT_NE(show.find("PCIe errors (AER)   0 correctable, 0 nonfatal, 0 fatal\n"),
            std::string::npos)
      << show;

  pin("pcie_link_width_lanes", "8");
  pin("pcie_aer_fatal_errors", "1");
  ASSERT_TRUE(xpu::test::wait_until(
      [&] {
        return xpuctl({"show", "3"}).second.find("fatal PCIe") != std::string::npos;
      },
      10s));
  show = xpuctl({"show", "3"}).second;
  EXPECT_NE(show.find("Health              Unhealthy (new fatal PCIe error (AER))\n"),
            std::string::npos)
      << show;
  EXPECT_NE(show.find("PCIe link           16.0 GT/s x8 (can do 16.0 GT/s x16)\n"),
            std::string::npos)
      << show;
  EXPECT_NE(show.find("PCIe errors (AER)   0 correctable, 0 nonfatal, 1 fatal\n"),
            std::string::npos)
      << show;
  EXPECT_NE(show.find("Warning             PCIe link downtrained: 16 GT/s x8, the card can do 16 "
                      "GT/s x16 (pcie_link_downtrained)\n"),
            std::string::npos)
      << show;
  const auto json = xpuctl({"show", "3", "--json"}).second;
  EXPECT_NE(json.find("\"health_warnings\":{\"pcie_link_downtrained\":\"PCIe link downtrained: "
                      "16 GT/s x8, the card can do 16 GT/s x16\"}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"pcie_aer_fatal_errors\":1"), std::string::npos) << json;
}

// The simulated card through the Simulator: what a test or a demo does to a sim card.
void simulate(const std::string& address, std::vector<std::string> call) {
  std::vector<std::string> argv = {
      "/usr/bin/busctl",     "--address=" + address, "call",
      "com.kunlunxin.xpud1", "/com/kunlunxin/xpud1", "com.kunlunxin.xpud1.Simulator"};
  argv.insert(argv.end(), call.begin(), call.end());
  xpu::test::TempDir dir;
  ChildProcess process(argv, dir.path() / "busctl.log");
  ASSERT_EQ(process.wait(10s), 0) << process.output();
}

TEST_F(XpuctlTest, ResetTellsTheCardAfterwardsAndEveryRefusal) {
  start_xpud("[sampling]\ninterval_ms = 100\n[recovery]\nenabled = true\n");
  // A card with its simulated workload on it is in use.
  auto [status, output] = xpuctl({"reset", "1"});
  EXPECT_EQ(status, 1);
  EXPECT_NE(output.find("xpu1 is in use: the driver counts 1 process(es) on it"), std::string::npos)
      << output;
  EXPECT_NE(output.find("com.kunlunxin.xpud1.Error.InUse"), std::string::npos) << output;
  // A faulted card with nothing on it comes back.
  simulate(bus_.address(), {"SetMetric", "usd", "1", "process_count", "0"});
  simulate(bus_.address(), {"SetHealth", "uss", "1", "Unhealthy", "XPU hang"});
  ASSERT_TRUE(xpu::test::wait_until(
      [&] {
        return xpuctl({"show", "1"}).second.find("XPU hang") != std::string::npos;
      },
      10s));
  EXPECT_EQ(xpuctl({"reset", "1"}), std::make_pair(0, std::string("xpu1: reset; Healthy\n")));
  ASSERT_TRUE(xpu::test::wait_until(
      [&] {
        return xpuctl({"show", "1"}).second.find("1 succeeded, 0 failed, 1 refused") !=
               std::string::npos;
      },
      5s))
      << xpuctl({"show", "1"}).second;
  EXPECT_EQ(xpuctl({"reset"}).first, 2);
  EXPECT_EQ(xpuctl({"reset", "one"}).first, 2);
  EXPECT_EQ(xpuctl({"reset", "9"}).first, 1);
}

TEST_F(XpuctlTest, ResetIsRefusedWhileRecoveryIsOff) {
  start_xpud();
  auto [status, output] = xpuctl({"reset", "0"});
  EXPECT_EQ(status, 1);
  EXPECT_NE(output.find("resets are off: [recovery] enabled = false in xpud.conf"),
            std::string::npos)
      << output;
}

TEST_F(XpuctlTest, BadUsage) {
  start_xpud();
  EXPECT_EQ(xpuctl({"show", "42"}),
            std::make_pair(1, std::string("xpuctl: no device with index 42\n")));
  EXPECT_EQ(xpuctl({"show", "three"}).first, 2);
  EXPECT_EQ(xpuctl({"show"}).first, 2);
  EXPECT_EQ(xpuctl({"reboot"}).first, 2);
  EXPECT_EQ(xpuctl({}).first, 2);
  EXPECT_EQ(xpuctl({"list", "--colour"}).first, 2);
}

}  // namespace
