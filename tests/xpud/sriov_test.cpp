// ConfigureVirtualFunctions end to end: the real xpud on a private bus, over the fake sysfs tree
// (a kernel stand-in makes the virtual functions when sriov_numvfs is written) and over the fake
// libxpuml (which makes them inside xpumlDeviceSetSriovVfNum), and on the sim backend, which
// simulates them. The new functions must appear as device objects with IsVirtualFunction through
// discovery, with no restart; errors, the caller check and the host's [sriov]
// allow_cluster_reconfigure are what a client sees.
#include <signal.h>
#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "common/names.h"
#include "common/xpud_client.h"
#include "tests/fakes/sysfs/fake_sysfs_tree.h"
#include "tests/support/child_process.h"
#include "tests/support/notify_socket.h"
#include "tests/support/private_bus.h"
#include "tests/support/wait.h"

namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using xpu::test::binary_path;
using xpu::test::ChildProcess;
using xpu::test::wait_until;
using xpu::test::write_file;
namespace fs = std::filesystem;

constexpr auto kCallTimeout = 10s;

// The part of the kernel that reacts to a write of sriov_numvfs: adds (or removes) the physical
// function's virtual functions 0000:3b:00.<1..N>, bound to kunlun with their /dev/xpuN, from
// index `first_index` on.
class KernelStandIn {
 public:
  KernelStandIn(xpu::fakes::FakeSysfsTree& tree, std::string pf, unsigned first_index)
      : tree_(tree), pf_(std::move(pf)), first_index_(first_index), thread_([this] { run(); }) {}
  ~KernelStandIn() {
    stop_ = true;
    thread_.join();
  }

 private:
  void run() {
    const fs::path numvfs = tree_.function_dir(pf_) / "sriov_numvfs";
    while (!stop_) {
      std::this_thread::sleep_for(5ms);
      std::ifstream file(numvfs);
      unsigned wanted = 0;
      if (!(file >> wanted) || wanted == present_) continue;
      for (; present_ > wanted; --present_) {
        tree_.remove_pci_function(bus_id(present_));
        tree_.remove_device_node(first_index_ + present_ - 1);
      }
      for (; present_ < wanted; ++present_) {
        const unsigned k = present_ + 1;
        tree_.add_card(xpu::fakes::kunlunxin_vf(bus_id(k), pf_), first_index_ + k - 1);
        tree_.publish_class_device(bus_id(k), first_index_ + k - 1);
      }
    }
  }
  std::string bus_id(unsigned k) const { return pf_.substr(0, pf_.size() - 1) + std::to_string(k); }

  xpu::fakes::FakeSysfsTree& tree_;
  const std::string pf_;
  const unsigned first_index_;
  unsigned present_ = 0;
  std::atomic<bool> stop_ = false;
  std::thread thread_;
};

class SriovTest : public ::testing::Test {
 protected:
  void start(const std::string& config) {
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

  // ConfigureVirtualFunctions as the unprivileged user nobody (dbus-send prints the error's
  // message, busctl only its errno): exit status and output.
  std::pair<int, std::string> configure_as_nobody(unsigned index, unsigned count) {
    // The private bus's socket lives in a directory of its own; nobody must reach it.
    const std::string socket = bus_.address().substr(std::string("unix:path=").size());
    ::chmod(fs::path(socket).parent_path().c_str(), 0755);
    ChildProcess call(
        {"/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
         "/usr/bin/dbus-send", "--bus=" + bus_.address(), "--print-reply",
         "--dest=" + std::string(xpu::names::kBusName), std::string(xpu::names::kManagerPath),
         std::string(xpu::names::kManagerInterface) + ".ConfigureVirtualFunctions",
         "uint32:" + std::to_string(index), "uint32:" + std::to_string(count)},
        dir_.path() / ("call." + std::to_string(++calls_)));
    auto status = call.wait(15s);
    return {status.value_or(-1), call.output()};
  }

  // xpuctl `args` as root on the private bus: its exit status (-1: still running after 15 s) and
  // its output.
  std::pair<int, std::string> xpuctl(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {binary_path("xpuctl/xpuctl").string(), "--bus-address",
                                     bus_.address()};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess process(argv, dir_.path() / ("xpuctl." + std::to_string(++calls_)));
    auto status = process.wait(15s);
    return {status.value_or(-1), process.output()};
  }

  std::string allowed_property() {
    ChildProcess busctl({"/usr/bin/busctl", "--address=" + bus_.address(), "get-property",
                         std::string(xpu::names::kBusName), std::string(xpu::names::kManagerPath),
                         std::string(xpu::names::kManagerInterface), "ClusterReconfigureAllowed"},
                        dir_.path() / ("busctl." + std::to_string(++calls_)));
    busctl.wait(15s);
    return busctl.output();
  }

  static unsigned count_virtual_functions(const std::vector<xpu::DeviceInfo>& devices) {
    unsigned n = 0;
    for (const auto& d : devices) n += d.is_virtual_function ? 1 : 0;
    return n;
  }

  xpu::test::TempDir dir_;
  xpu::test::PrivateBus bus_;
  xpu::test::NotifySocket notify_{dir_.path() / "notify"};
  std::unique_ptr<ChildProcess> xpud_;
  unsigned calls_ = 0;
};

class SysfsSriovTest : public SriovTest {
 protected:
  void SetUp() override {
    tree_.add_control_node();
    auto sriov = xpu::fakes::kunlunxin_r_series("0000:3b:00.0", 1, 0);
    sriov.sriov_totalvfs = 4;
    tree_.add_card(sriov, 0);
    tree_.publish_class_device("0000:3b:00.0", 0);
    tree_.add_card(xpu::fakes::kunlunxin_r_series("0000:3d:00.0", 1, 0), 1);
    tree_.publish_class_device("0000:3d:00.0", 1);
  }

  std::string config(bool allow) const {
    // The kernel stand-in makes the VFs a moment after the write and sends no uevent (a real
    // kernel does both at once): a fast rescan finds them.
    return "[daemon]\nbackend = sysfs\n[sampling]\ninterval_ms = 100\nrescan_interval_ms = 1000\n"
           "[sysfs]\nroot = " +
           tree_.root().string() +
           "\n[sriov]\nallow_cluster_reconfigure = " + (allow ? "true" : "false") + "\n";
  }

  xpu::fakes::FakeSysfsTree tree_;
};

TEST_F(SysfsSriovTest, TwoVirtualFunctionsBecomeTwoDeviceObjectsWithoutARestart) {
  start(config(false));
  KernelStandIn kernel(tree_, "0000:3b:00.0", 2);
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});
  ASSERT_EQ(client.list_devices()->size(), 2u);
  const pid_t pid = xpud_->pid();

  const auto asked = std::chrono::steady_clock::now();
  auto done = client.configure_virtual_functions(0, 2, kCallTimeout);
  ASSERT_TRUE(done) << done.error() << "\n" << xpud_->output();
  ASSERT_TRUE(wait_until(
      [&] {
        auto devices = client.list_devices();
        return devices && devices->size() == 4u;
      },
      5s))
      << xpud_->output();
  const auto took = std::chrono::steady_clock::now() - asked;
  std::printf(
      "ConfigureVirtualFunctions(0, 2) to two VF objects on the bus: %lld ms\n",
      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));

  auto devices = client.list_devices();
  ASSERT_TRUE(devices);
  EXPECT_FALSE((*devices)[0].is_virtual_function);
  EXPECT_FALSE((*devices)[1].is_virtual_function);
  EXPECT_TRUE((*devices)[2].is_virtual_function);
  EXPECT_TRUE((*devices)[3].is_virtual_function);
  EXPECT_EQ((*devices)[2].pci_bus_id, "0000:3b:00.1");
  EXPECT_EQ((*devices)[3].pci_bus_id, "0000:3b:00.2");
  EXPECT_EQ((*devices)[3].model, "KL2-VF");
  EXPECT_EQ(xpud_->pid(), pid);
  EXPECT_TRUE(xpud_->running());
  EXPECT_THAT(xpud_->output(),
              HasSubstr("ConfigureVirtualFunctions: 2 virtual functions asked by uid 0"));

  // And back to none: the VF objects go the same way.
  ASSERT_TRUE(client.configure_virtual_functions(0, 0, kCallTimeout));
  ASSERT_TRUE(wait_until(
      [&] {
        auto now = client.list_devices();
        return now && now->size() == 2u && count_virtual_functions(*now) == 0;
      },
      5s))
      << xpud_->output();
}

// The PF whose VFs are on stays a device (operators see it) and says why the cluster does not
// offer it: on the bus (SriovEnabled), in the unit's STATUS line and in xpuctl list.
TEST_F(SysfsSriovTest, APhysicalFunctionWithVirtualFunctionsOnSaysSo) {
  start(config(false));
  KernelStandIn kernel(tree_, "0000:3b:00.0", 2);
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});
  ASSERT_GE(notify_.wait_for("STATUS=2 devices, 2 healthy, backend sysfs", 5s), 0);
  auto before = client.list_devices();
  ASSERT_TRUE(before);
  ASSERT_EQ(before->size(), 2u);
  EXPECT_FALSE((*before)[0].sriov_enabled);

  ASSERT_TRUE(client.configure_virtual_functions(0, 2, kCallTimeout)) << xpud_->output();
  ASSERT_TRUE(wait_until(
      [&] {
        auto devices = client.list_devices();
        return devices && devices->size() == 4u && (*devices)[0].sriov_enabled;
      },
      5s))
      << xpud_->output();
  auto devices = client.list_devices();
  ASSERT_TRUE(devices);
  EXPECT_EQ((*devices)[0].pci_bus_id, "0000:3b:00.0");
  EXPECT_FALSE((*devices)[1].sriov_enabled);
  EXPECT_FALSE((*devices)[2].sriov_enabled);
  EXPECT_TRUE((*devices)[2].is_virtual_function);
  const int on = notify_.wait_for(
      "STATUS=4 devices, 4 healthy, 1 PF with SR-IOV on (not offered), backend sysfs", 5s);
  EXPECT_GE(on, 0);

  auto [status, listed] = xpuctl({"list"});
  EXPECT_EQ(status, 0) << listed;
  EXPECT_THAT(listed, HasSubstr("4 devices, 4 healthy, 1 PF with SR-IOV on (not offered)"));
  EXPECT_THAT(listed, HasSubstr("(PF, SR-IOV on)"));
  auto [json_status, json] = xpuctl({"list", "--json"});
  EXPECT_EQ(json_status, 0) << json;
  EXPECT_THAT(json, HasSubstr(R"("pci_bus_id":"0000:3b:00.0")"));
  const auto first = json.find(R"("sriov_enabled":true)");
  EXPECT_NE(first, std::string::npos) << json;
  EXPECT_EQ(json.find(R"("sriov_enabled":true)", first + 1), std::string::npos)
      << "only the PF: " << json;

  // Off again: the PF is a whole card once more.
  ASSERT_TRUE(client.configure_virtual_functions(0, 0, kCallTimeout));
  EXPECT_GE(notify_.wait_for("STATUS=2 devices, 2 healthy, backend sysfs", 5s,
                             static_cast<size_t>(on + 1)),
            0)
      << xpud_->output();
}

TEST_F(SysfsSriovTest, ErrorsSayWhatIsWrong) {
  start(config(false));
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});

  auto too_many = client.configure_virtual_functions(0, 5, kCallTimeout);
  ASSERT_FALSE(too_many);
  EXPECT_THAT(too_many.error(),
              HasSubstr("xpu0 (0000:3b:00.0) supports at most 4 virtual functions"));
  EXPECT_THAT(too_many.error(), HasSubstr(std::string(xpu::names::kErrorInvalidArgument)));

  auto no_sriov = client.configure_virtual_functions(1, 1, kCallTimeout);
  ASSERT_FALSE(no_sriov);
  EXPECT_THAT(no_sriov.error(), HasSubstr("xpu1 (0000:3d:00.0) has no SR-IOV capability"));
  EXPECT_THAT(no_sriov.error(), HasSubstr(std::string(xpu::names::kErrorNotSupported)));

  auto no_card = client.configure_virtual_functions(7, 1, kCallTimeout);
  ASSERT_FALSE(no_card);
  EXPECT_THAT(no_card.error(), HasSubstr("no device xpu7"));
  EXPECT_THAT(no_card.error(), HasSubstr(std::string(xpu::names::kErrorNoSuchDevice)));

  std::ifstream numvfs(tree_.function_dir("0000:3b:00.0") / "sriov_numvfs");
  unsigned value = 99;
  numvfs >> value;
  EXPECT_EQ(value, 0u) << "no refused call wrote anything";
}

TEST_F(SysfsSriovTest, XpuctlConfigureVfs) {
  start(config(false));
  KernelStandIn kernel(tree_, "0000:3b:00.0", 2);
  auto [status, output] = xpuctl({"configure-vfs", "0", "2"});
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output, "xpu0: 2 virtual functions\n");
  ASSERT_TRUE(wait_until(
      [&] {
        auto listed = xpuctl({"list"});
        return listed.second.find("0000:3b:00.2") != std::string::npos;
      },
      5s))
      << xpud_->output();

  auto [bad_status, bad_output] = xpuctl({"configure-vfs", "0", "9"});
  EXPECT_EQ(bad_status, 1);
  EXPECT_THAT(bad_output, HasSubstr("supports at most 4 virtual functions"));
  auto [usage_status, usage_output] = xpuctl({"configure-vfs", "0"});
  EXPECT_EQ(usage_status, 2);
  EXPECT_THAT(usage_output, HasSubstr("usage: configure-vfs INDEX COUNT"));
}

TEST_F(SysfsSriovTest, OnlyRootUnlessTheHostAllowsTheCluster) {
  start(config(false));
  EXPECT_THAT(allowed_property(), HasSubstr("b false"));
  auto [status, output] = configure_as_nobody(0, 1);
  EXPECT_NE(status, 0) << output;
  EXPECT_THAT(output, HasSubstr("ConfigureVirtualFunctions is for root"));
  EXPECT_THAT(output, HasSubstr("allow_cluster_reconfigure = true"));

  // The host allows it (reload, no restart): the same caller is served. On the system bus, the
  // policy admits only root and xpud-api-proxy's user to this method at all.
  write_file(dir_.path() / "xpud.conf", config(true));
  xpud_->signal(SIGHUP);
  ASSERT_TRUE(
      wait_until([&] { return allowed_property().find("b true") != std::string::npos; }, 5s))
      << xpud_->output();
  auto [allowed_status, allowed_output] = configure_as_nobody(0, 1);
  EXPECT_EQ(allowed_status, 0) << allowed_output << xpud_->output();
  EXPECT_THAT(xpud_->output(), HasSubstr("asked by uid 65534"));

  write_file(dir_.path() / "xpud.conf", config(false));
  xpud_->signal(SIGHUP);
  ASSERT_TRUE(
      wait_until([&] { return allowed_property().find("b false") != std::string::npos; }, 5s));
  EXPECT_NE(configure_as_nobody(0, 0).first, 0);
}

TEST_F(SriovTest, LibraryVirtualFunctionsAreOnTheBusWhenTheCallReturns) {
  write_file(dir_.path() / "scenario", "devices 2\ndevice 0\nmax_vfs 4\n");
  start("[daemon]\nbackend = xpuml\n[sampling]\ninterval_ms = 60000\n[xpuml]\nlibrary = " FAKE_XPUML
        "\n[sysfs]\nroot = " +
        dir_.path().string() + "\n");
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});
  ASSERT_EQ(client.list_devices()->size(), 2u);

  // The sampling interval is a minute: only the discovery run for the call can show them.
  auto done = client.configure_virtual_functions(0, 2, kCallTimeout);
  ASSERT_TRUE(done) << done.error() << "\n" << xpud_->output();
  auto devices = client.list_devices();
  ASSERT_TRUE(devices);
  ASSERT_EQ(devices->size(), 4u);
  EXPECT_EQ(count_virtual_functions(*devices), 2u);
  EXPECT_TRUE((*devices)[2].is_virtual_function);
  EXPECT_TRUE((*devices)[3].is_virtual_function);

  auto too_many = client.configure_virtual_functions(0, 5, kCallTimeout);
  ASSERT_FALSE(too_many);
  EXPECT_THAT(too_many.error(), HasSubstr("supports at most 4 virtual functions (maxVFCount)"));
  auto no_sriov = client.configure_virtual_functions(1, 1, kCallTimeout);
  ASSERT_FALSE(no_sriov);
  EXPECT_THAT(no_sriov.error(), HasSubstr(std::string(xpu::names::kErrorNotSupported)));
}

// The sim backend simulates the vendor's R200 virtual functions (sim_identity.h): xpuctl
// configure-vfs as root, and the cards appear in xpuctl list and on the bus.
TEST_F(SriovTest, TheSimBackendSimulatesVirtualFunctions) {
  start("[daemon]\nbackend = sim\n[sim]\ndevices = 8\nmemory_mib = 16384\n");
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});
  ASSERT_EQ(client.list_devices()->size(), 8u);

  auto [status, output] = xpuctl({"configure-vfs", "7", "2"});
  EXPECT_EQ(status, 0) << output << xpud_->output();
  EXPECT_EQ(output, "xpu7: 2 virtual functions\n");
  std::string listed;
  ASSERT_TRUE(wait_until(
      [&] {
        listed = xpuctl({"list"}).second;
        return listed.find("0000:86:00.2") != std::string::npos;
      },
      5s))
      << listed << xpud_->output();
  EXPECT_THAT(listed, HasSubstr("10 devices, 10 healthy, 1 PF with SR-IOV on (not offered)"));
  EXPECT_THAT(listed, HasSubstr("R200 (PF, SR-IOV on)"));
  EXPECT_THAT(listed, HasSubstr("R200-VF-8G (VF)"));
  EXPECT_THAT(listed, HasSubstr("0000:86:00.1"));

  auto devices = client.list_devices();
  ASSERT_TRUE(devices);
  ASSERT_EQ(devices->size(), 10u);
  EXPECT_TRUE((*devices)[7].sriov_enabled);
  for (unsigned i : {8u, 9u}) {
    const auto& vf = (*devices)[i];
    EXPECT_EQ(vf.index, i);
    EXPECT_TRUE(vf.is_virtual_function) << i;
    EXPECT_EQ(vf.model, "R200-VF-8G") << i;
    EXPECT_EQ(vf.memory_total_bytes, 8ull << 30) << i;
    EXPECT_EQ(vf.physical_function, "0000:86:00.0") << i;
    EXPECT_TRUE(vf.healthy) << i;
  }

  auto too_many = client.configure_virtual_functions(7, 4, kCallTimeout);
  ASSERT_FALSE(too_many);
  EXPECT_THAT(too_many.error(),
              HasSubstr("xpu7 (0000:86:00.0) supports at most 3 virtual functions"));
  EXPECT_THAT(too_many.error(), HasSubstr(std::string(xpu::names::kErrorInvalidArgument)));
  auto on_vf = client.configure_virtual_functions(8, 1, kCallTimeout);
  ASSERT_FALSE(on_vf);
  EXPECT_THAT(on_vf.error(), HasSubstr(std::string(xpu::names::kErrorNotSupported)));

  // And back to none: the VF objects go, the PF is a whole card again.
  ASSERT_TRUE(client.configure_virtual_functions(7, 0, kCallTimeout)) << xpud_->output();
  ASSERT_TRUE(wait_until(
      [&] {
        auto now = client.list_devices();
        return now && now->size() == 8u && !(*now)[7].sriov_enabled;
      },
      5s))
      << xpud_->output();
}

}  // namespace
