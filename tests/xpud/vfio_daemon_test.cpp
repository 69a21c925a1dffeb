// Cards for virtual machines, end to end: the real xpud on a private bus over a fake sysfs tree
// (sysfs backend). A function on vfio-pci is no card of the Manager's (it left the compute
// pool) and is listed on the Vfio interface, with its CDI spec; a card an operator moves there
// while xpud runs follows at the next discovery; Bind and Unbind are root's, and their refusals
// reach the caller as xpud words them. The moves themselves, and their roll-backs, are in
// tests/xpud/backends/vfio/vfio_binding_test.cpp against the kernel's stand-in.
#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/names.h"
#include "common/xpud_client.h"
#include "common/xpud_vfio_client.h"
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
namespace fs = std::filesystem;

constexpr const char* kCard = "0000:3b:00.0";
constexpr const char* kPassedThrough = "0000:5e:00.0";

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class VfioDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tree_.add_control_node();
    tree_.add_card(xpu::fakes::kunlunxin_r_series(kCard, 1, 0), 0);
    tree_.publish_class_device(kCard, 0);
    // Given to a VM before xpud started: on vfio-pci, in IOMMU group 7, no /dev/xpuN.
    auto passed = xpu::fakes::kunlunxin_r_series(kPassedThrough, 1, 1);
    passed.driver = "vfio-pci";
    tree_.add_pci_function(passed);
    tree_.add_to_iommu_group(kPassedThrough, 7);
    xpu::test::write_file(dir_.path() / "xpud.conf",
                          "[daemon]\nbackend = sysfs\n[sampling]\nrescan_interval_ms = 1000\n"
                          "[sysfs]\nroot = " +
                              tree_.root().string() + "\n[cdi]\nenabled = true\ndirectory = " +
                              (dir_.path() / "cdi").string() + "\n");
    xpud_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{binary_path("xpud/xpud").string(), "--bus-address", bus_.address(),
                                 "--config", (dir_.path() / "xpud.conf").string()},
        dir_.path() / "xpud.log",
        std::map<std::string, std::string>{{"NOTIFY_SOCKET", notify_.path()}});
    ASSERT_GE(notify_.wait_for("READY=1", 10s), 0) << xpud_->output();
  }

  std::pair<int, std::string> xpuctl(const std::vector<std::string>& args, bool as_nobody = false) {
    std::vector<std::string> argv = {binary_path("xpuctl/xpuctl").string(), "--bus-address",
                                     bus_.address()};
    argv.insert(argv.end(), args.begin(), args.end());
    if (as_nobody) {
      const std::string socket = bus_.address().substr(std::string("unix:path=").size());
      ::chmod(fs::path(socket).parent_path().c_str(), 0755);
      argv.insert(argv.begin(), {"/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup",
                                 "--clear-groups", "--"});
    }
    ChildProcess process(argv, dir_.path() / ("xpuctl." + std::to_string(++calls_)));
    auto status = process.wait(15s);
    return {status.value_or(-1), process.output()};
  }

  std::vector<xpu::VfioFunctionInfo> vfio_functions() {
    auto listed = xpu::XpudVfioClient({bus_.address(), 2s}).list();
    return listed ? *listed : std::vector<xpu::VfioFunctionInfo>{};
  }

  xpu::fakes::FakeSysfsTree tree_;
  xpu::test::TempDir dir_;
  xpu::test::PrivateBus bus_;
  xpu::test::NotifySocket notify_{dir_.path() / "notify"};
  std::unique_ptr<ChildProcess> xpud_;
  unsigned calls_ = 0;
};

TEST_F(VfioDaemonTest, AFunctionOnVfioPciIsListedApartFromTheCards) {
  auto cards = xpu::XpudClient({bus_.address(), 2s}).list_devices();
  ASSERT_TRUE(cards.ok()) << cards.error();
  ASSERT_EQ(cards->size(), 1u);
  EXPECT_EQ((*cards)[0].pci_bus_id, kCard);

  auto functions = vfio_functions();
  ASSERT_EQ(functions.size(), 1u) << xpud_->output();
  EXPECT_EQ(functions[0].pci_bus_id, kPassedThrough);
  EXPECT_EQ(functions[0].pci_id, "1d22:3684");
  EXPECT_EQ(functions[0].iommu_group, "7");
  EXPECT_EQ(functions[0].model, "R200");
  EXPECT_EQ(functions[0].numa_node, 1);

  auto [status, output] = xpuctl({"vfio", "list"});
  EXPECT_EQ(status, 0) << output;
  EXPECT_THAT(output, HasSubstr("0000:5e:00.0  1d22:3684  R200   -      7            /dev/vfio/7"));

  // The CDI spec a runtime resolves kunlunxin.com/xpu_vfio=0000:5e:00.0 from.
  const fs::path spec_path = dir_.path() / "cdi" / "kunlunxin-xpu-vfio.json";
  ASSERT_TRUE(wait_until([&] { return fs::exists(spec_path); })) << xpud_->output();
  auto spec = nlohmann::json::parse(read_file(spec_path));
  EXPECT_EQ(spec["kind"], "kunlunxin.com/xpu_vfio");
  ASSERT_EQ(spec["devices"].size(), 1u);
  EXPECT_EQ(spec["devices"][0]["name"], kPassedThrough);
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["env"][0],
            "PCI_RESOURCE_KUNLUNXIN_COM_XPU_VFIO=0000:5e:00.0");
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["deviceNodes"][0]["path"], "/dev/vfio/7");
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["deviceNodes"][1]["path"], "/dev/vfio/vfio");
}

TEST_F(VfioDaemonTest, ACardMovedByAnOperatorLeavesTheCardsForTheList) {
  // As driverctl or a hand-written echo would do it: the card's node goes with its driver.
  tree_.add_to_iommu_group(kCard, 3);
  tree_.bind_driver(kCard, "vfio-pci");
  tree_.remove_device_node(0);
  fs::remove_all(tree_.function_dir(kCard) / "xpu");
  ASSERT_TRUE(wait_until([&] { return vfio_functions().size() == 2; }, 15s)) << xpud_->output();
  auto cards = xpu::XpudClient({bus_.address(), 2s}).list_devices();
  ASSERT_TRUE(cards.ok());
  EXPECT_TRUE(cards->empty());
  const auto spec = read_file(dir_.path() / "cdi" / "kunlunxin-xpu-vfio.json");
  EXPECT_THAT(spec, HasSubstr("/dev/vfio/3"));
}

TEST_F(VfioDaemonTest, OnlyRootMovesAFunction) {
  auto [status, output] = xpuctl({"vfio", "bind", kCard}, /*as_nobody=*/true);
  EXPECT_EQ(status, 1) << output;
  EXPECT_THAT(output, HasSubstr("Bind is for root or xpud's own user"));
  std::tie(status, output) = xpuctl({"vfio", "unbind", kPassedThrough}, /*as_nobody=*/true);
  EXPECT_EQ(status, 1) << output;
  EXPECT_THAT(output, HasSubstr("Unbind is for root or xpud's own user"));
  EXPECT_EQ(vfio_functions().size(), 1u);
}

TEST_F(VfioDaemonTest, RefusalsReachTheCallerAsXpudWordsThem) {
  // The card has no IOMMU group in this tree: refused before anything is written, through the
  // driver thread like every move.
  auto [status, output] = xpuctl({"vfio", "bind", "xpu0"});
  EXPECT_EQ(status, 1) << output;
  EXPECT_THAT(output, HasSubstr("0000:3b:00.0 has no IOMMU group"));
  EXPECT_THAT(output, HasSubstr("NotSupported"));
  EXPECT_EQ(read_file(tree_.function_dir(kCard) / "driver_override"), "(null)\n");

  std::tie(status, output) = xpuctl({"vfio", "bind", "0000:99:00.0"});
  EXPECT_EQ(status, 1) << output;
  EXPECT_THAT(output, HasSubstr("no PCI function 0000:99:00.0"));
  std::tie(status, output) = xpuctl({"vfio", "bind", "not-an-address"});
  EXPECT_EQ(status, 1) << output;
  EXPECT_THAT(output, HasSubstr("not a PCI address"));
  // Giving the passed-through card back: kunlun is loaded (the card on it made its directory),
  // no VM holds the group, but this tree of plain files has no vfio-pci/unbind to write: the
  // first write fails and nothing changed.
  std::tie(status, output) = xpuctl({"vfio", "unbind", kPassedThrough});
  EXPECT_EQ(status, 1) << output;
  EXPECT_THAT(output, HasSubstr("0000:5e:00.0: vfio-pci would not let it go (unbind: No such file "
                                "or directory); nothing changed"));
  EXPECT_EQ(vfio_functions().size(), 1u);
}

// A card with a cXPU instance on it is not taken from its tenant: the sim backend keeps
// instances (its cards have PCI addresses but no sysfs, so nothing could be moved anyway; the
// refusal comes first).
TEST(VfioDaemonSimTest, ACardWithAnInstanceIsInUse) {
  xpu::test::TempDir dir;
  xpu::test::PrivateBus bus;
  xpu::test::NotifySocket notify{dir.path() / "notify"};
  xpu::test::write_file(dir.path() / "xpud.conf", "[daemon]\nbackend = sim\n[sim]\ndevices = 2\n");
  ChildProcess xpud({binary_path("xpud/xpud").string(), "--bus-address", bus.address(), "--config",
                     (dir.path() / "xpud.conf").string()},
                    dir.path() / "xpud.log", {{"NOTIFY_SOCKET", notify.path()}});
  ASSERT_GE(notify.wait_for("READY=1", 10s), 0) << xpud.output();
  auto run = [&](std::vector<std::string> args, const std::string& name) {
    args.insert(args.begin(),
                {binary_path("xpuctl/xpuctl").string(), "--bus-address", bus.address()});
    ChildProcess process(args, dir.path() / name);
    auto status = process.wait(15s);
    return std::make_pair(status.value_or(-1), process.output());
  };
  auto [made, made_output] = run({"create-instance", "1", "vm-test", "1073741824"}, "made");
  ASSERT_EQ(made, 0) << made_output;
  auto [status, output] = run({"vfio", "bind", "xpu1"}, "bind");
  EXPECT_EQ(status, 1) << output;
  EXPECT_THAT(output, HasSubstr("has the cXPU instance vm-test (xpuctl instances); destroy it"));
  EXPECT_THAT(output, HasSubstr("com.kunlunxin.xpud1.Error.InUse"));
}

}  // namespace
