// --reconfig-vxpu as a process, through the real bus boundary: xpud (xpuml backend over the fake
// libxpuml, the hardware boundary) on a private bus, xpud-api-proxy in front of it, and the
// device plugin reaching xpud only through the proxy's SR-IOV socket, as the chart mounts it with
// devicePlugin.reconfigVxpu (the read-only socket refuses the write to everyone). The host's
// [sriov] allow_cluster_reconfigure decides: false, nothing changes and the plugin says why;
// true, the card with SR-IOV gets --sriov-num-vfs virtual functions and they appear on xpud's
// bus as devices with IsVirtualFunction.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "common/xpud_client.h"
#include "tests/support/child_process.h"
#include "tests/support/private_bus.h"
#include "tests/support/wait.h"

namespace {

using namespace std::chrono_literals;
using xpu::test::binary_path;
using xpu::test::ChildProcess;
using xpu::test::wait_until;
using xpu::test::write_file;
namespace fs = std::filesystem;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class SriovReconfigProcessTest : public ::testing::Test {
 protected:
  void start(bool allow) {
    fs::create_directories(plugin_dir_);
    // xpu0 can have up to 4 virtual functions, xpu1 has no SR-IOV.
    write_file(dir_.path() / "scenario", "devices 2\ndevice 0\nmax_vfs 4\n");
    write_file(dir_.path() / "xpud.conf",
               std::string("[daemon]\nbackend = xpuml\n[sampling]\ninterval_ms = 100\n"
                           "[xpuml]\nlibrary = " FAKE_XPUML "\n[sysfs]\nroot = ") +
                   dir_.path().string() +
                   "\n[sriov]\nallow_cluster_reconfigure = " + (allow ? "true" : "false") + "\n");
    xpud_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{binary_path("xpud/xpud").string(), "--bus-address", bus_.address(),
                                 "--config", (dir_.path() / "xpud.conf").string()},
        dir_.path() / "xpud.log",
        std::map<std::string, std::string>{
            {"XPUML_FAKE_SCRIPT", (dir_.path() / "scenario").string()}});
    proxy_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{binary_path("xpud-api-proxy/xpud-api-proxy").string(),
                                 "--bus-address", bus_.address(), "--listen", socket_.string(),
                                 "--listen-sriov", sriov_socket_.string()},
        dir_.path() / "proxy.log");
    xpu::XpudClient direct(xpu::ClientOptions{bus_.address(), 2s});
    ASSERT_TRUE(
        wait_until([&] { return direct.list_devices().ok() && fs::exists(sriov_socket_); }, 15s))
        << xpud_->output() << proxy_->output();
    shim_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{binary_path("k8s-shim/xpu-k8s-shim").string(), "--bus-address",
                                 "unix:path=" + sriov_socket_.string(), "device-plugin",
                                 "--plugin-dir", plugin_dir_.string(), "--enable-sriov",
                                 "--sriov-num-vfs", "2", "--reconfig-vxpu"},
        dir_.path() / "shim.log");
  }

  std::string all_output() const {
    return "shim:\n" + shim_->output() + "\nproxy:\n" + proxy_->output() + "\nxpud:\n" +
           xpud_->output();
  }

  xpu::test::TempDir dir_;
  xpu::test::PrivateBus bus_;
  fs::path socket_ = dir_.path() / "api.sock";
  fs::path sriov_socket_ = dir_.path() / "sriov.sock";
  fs::path plugin_dir_ = dir_.path() / "device-plugins";  // no kubelet.sock: none is needed
  std::unique_ptr<ChildProcess> xpud_, proxy_, shim_;
};

TEST_F(SriovReconfigProcessTest, TheHostAllowsItAndTheCardGetsItsVirtualFunctions) {
  start(true);
  xpu::XpudClient direct(xpu::ClientOptions{bus_.address(), 2s});
  ASSERT_TRUE(wait_until(
      [&] {
        auto devices = direct.list_devices();
        return devices && devices->size() == 4u;
      },
      15s))
      << all_output();
  auto devices = direct.list_devices();
  EXPECT_FALSE((*devices)[0].is_virtual_function);
  EXPECT_FALSE((*devices)[1].is_virtual_function);
  EXPECT_TRUE((*devices)[2].is_virtual_function);
  EXPECT_TRUE((*devices)[3].is_virtual_function);
  ASSERT_TRUE(wait_until(
      [&] {
        return shim_->output().find("--reconfig-vxpu: xpu1 not changed") != std::string::npos;
      },
      15s))
      << all_output();
  const std::string shim = shim_->output();
  EXPECT_NE(shim.find("--reconfig-vxpu: xpu0 set to 2 virtual functions"), std::string::npos)
      << shim;
  EXPECT_NE(shim.find("xpu1 (0000:3c:00.0) has no SR-IOV capability"), std::string::npos) << shim;
  EXPECT_NE(
      proxy_->output().find("forwarding com.kunlunxin.xpud1.Manager.ConfigureVirtualFunctions"),
      std::string::npos);
  // The node stays short of 2 x 2 (xpu1 cannot), yet each card was asked once.
  EXPECT_TRUE(
      wait_until([&] { return count(shim_->output(), "SR-IOV virtual functions, but") >= 1; }, 5s));
  EXPECT_EQ(count(shim_->output(), "asking xpud for 2 virtual functions on xpu0"), 1u)
      << shim_->output();
  EXPECT_EQ(count(shim_->output(), "asking xpud for 2 virtual functions on xpu1"), 1u)
      << shim_->output();
}

TEST_F(SriovReconfigProcessTest, TheHostDoesNotAllowItAndNothingChanges) {
  start(false);
  ASSERT_TRUE(wait_until(
      [&] {
        return shim_->output().find("--reconfig-vxpu: xpu0 not changed") != std::string::npos;
      },
      15s))
      << all_output();
  EXPECT_NE(shim_->output().find("allow_cluster_reconfigure is false"), std::string::npos)
      << all_output();
  xpu::XpudClient direct(xpu::ClientOptions{bus_.address(), 2s});
  auto devices = direct.list_devices();
  ASSERT_TRUE(devices);
  EXPECT_EQ(devices->size(), 2u);
  EXPECT_EQ(xpud_->output().find("ConfigureVirtualFunctions:"), std::string::npos)
      << "the proxy refused it; xpud never saw it\n"
      << xpud_->output();
}

}  // namespace
