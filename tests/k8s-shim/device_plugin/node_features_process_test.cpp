// The device-plugin role writing node-feature-discovery's feature file, as a process: the real
// xpud (xpuml backend over the fake libxpuml, the hardware boundary) on a private bus, the real
// shim. The file appears with the node's facts, follows a change of the facts, is left alone
// when only health changes, and goes away when the role stops. No kubelet is needed: the labels
// do not depend on registration.
#include <signal.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

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

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string expected_file(unsigned cards) {
  return "# XPU facts of this node, written by xpu-k8s-shim device-plugin for "
         "node-feature-discovery's\n"
         "# local source; rewritten when they change, removed when the device plugin stops.\n"
         "kunlunxin.com/xpu.count=" +
         std::to_string(cards) +
         "\n"
         "kunlunxin.com/xpu.model=R200\n"
         "kunlunxin.com/xpu.memory-gib=32\n"
         "kunlunxin.com/xpu.driver-version=5.0.21-build-7-x\n"  // xpud said "5.0.21 (build=7/x)"
         "kunlunxin.com/xpu.vf.count=0\n"
         "kunlunxin.com/xpu.sriov=false\n"
         "kunlunxin.com/xpu.share=true\n"
         "kunlunxin.com/xpu.share.replicas=2\n";
}

constexpr const char* kWritten = "node labels for node-feature-discovery written to";
constexpr const char* kUnchanged = "node labels for node-feature-discovery unchanged";

class NodeFeaturesProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(features_dir_);
    fs::create_directories(plugin_dir_);
    set_scenario(2, "");
    // A card added to the scenario comes with no uevent: the 1 s rescan finds it.
    write_file(dir_.path() / "xpud.conf",
               "[daemon]\nbackend = xpuml\n[sampling]\ninterval_ms = 100\n"
               "rescan_interval_ms = 1000\n[xpuml]\nlibrary = " FAKE_XPUML "\n[sysfs]\nroot = " +
                   dir_.path().string() + "\n");
    xpud_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{binary_path("xpud/xpud").string(), "--bus-address", bus_.address(),
                                 "--config", (dir_.path() / "xpud.conf").string()},
        dir_.path() / "xpud.log",
        std::map<std::string, std::string>{
            {"XPUML_FAKE_SCRIPT", (dir_.path() / "scenario").string()}});
  }

  // Replaced atomically, as the fake's README asks.
  void set_scenario(unsigned cards, const std::string& extra) {
    write_file(dir_.path() / "scenario.tmp", "devices " + std::to_string(cards) +
                                                 "\ndriver_version 5.0.21 (build=7/x)\n" + extra);
    fs::rename(dir_.path() / "scenario.tmp", dir_.path() / "scenario");
  }

  void start_shim(const std::string& log = "shim.log") {
    shim_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{binary_path("k8s-shim/xpu-k8s-shim").string(), "--bus-address",
                                 bus_.address(), "device-plugin", "--plugin-dir",
                                 plugin_dir_.string(), "--enable-xpu-share", "--xpu-share-replicas",
                                 "2", "--nfd-features-file", features_file_.string(),
                                 "--memory-unit", "GiB", "--log-level", "debug"},
        dir_.path() / log);
  }

  xpu::test::TempDir dir_;
  xpu::test::PrivateBus bus_;
  fs::path features_dir_ = dir_.path() / "etc/kubernetes/node-feature-discovery/features.d";
  fs::path features_file_ = features_dir_ / "kunlunxin-xpu";
  fs::path plugin_dir_ = dir_.path() / "device-plugins";  // no kubelet.sock: none is needed
  std::unique_ptr<ChildProcess> xpud_;
  std::unique_ptr<ChildProcess> shim_;
};

TEST_F(NodeFeaturesProcessTest, FileFollowsTheFactsNotTheHealthAndGoesAtStop) {
  start_shim();
  ASSERT_TRUE(wait_until([&] { return read(features_file_) == expected_file(2); }, 15s))
      << "file:\n"
      << read(features_file_) << "\nshim:\n"
      << shim_->output() << "\nxpud:\n"
      << xpud_->output();
  EXPECT_EQ(fs::status(features_file_).permissions(), fs::perms(0644));
  struct stat before {};
  ASSERT_EQ(::stat(features_file_.c_str(), &before), 0);

  // Only health changes: the shim sees it (its tracker logs the card Unhealthy, after the
  // content was recomputed), finds the bytes equal and leaves the file alone.
  set_scenario(2, "device 1\nstate ERROR\n");
  std::size_t unhealthy_at = 0;
  ASSERT_TRUE(wait_until(
      [&] {
        auto out = shim_->output();
        unhealthy_at = out.find("Unhealthy");
        return unhealthy_at != std::string::npos &&
               out.find(kUnchanged, unhealthy_at) != std::string::npos;
      },
      15s))
      << shim_->output();
  struct stat after {};
  ASSERT_EQ(::stat(features_file_.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);

  // A third card appears: the file is replaced (a new inode: renamed into place) with count 3.
  set_scenario(3, "device 1\nstate ERROR\n");
  ASSERT_TRUE(wait_until([&] { return read(features_file_) == expected_file(3); }, 15s))
      << "file:\n"
      << read(features_file_) << "\nshim:\n"
      << shim_->output();
  ASSERT_EQ(::stat(features_file_.c_str(), &after), 0);
  EXPECT_NE(after.st_ino, before.st_ino);
  // Two writes in all: the first facts and the third card; the health change wrote nothing.
  // The shim logs a write just after its rename, so the second line may trail the file a little.
  EXPECT_TRUE(wait_until([&] { return count(shim_->output(), kWritten) >= 2; }, 5s))
      << shim_->output();
  EXPECT_EQ(count(shim_->output(), kWritten), 2u) << shim_->output();
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(features_dir_))
    names.push_back(entry.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"kunlunxin-xpu"}) << "no temp file left behind";

  shim_->signal(SIGTERM);
  EXPECT_EQ(shim_->wait(10s), 0) << shim_->output();
  EXPECT_FALSE(fs::exists(features_file_)) << "removed at stop, so NFD drops the labels";
}

TEST_F(NodeFeaturesProcessTest, ARestartWithTheSameFactsLeavesTheFileAlone) {
  start_shim();
  ASSERT_TRUE(wait_until([&] { return read(features_file_) == expected_file(2); }, 15s))
      << shim_->output();
  // What a crash leaves: the file stays (SIGKILL gives the role no chance to remove it).
  shim_->signal(SIGKILL);
  ASSERT_TRUE(shim_->wait(10s).has_value());
  struct stat before {};
  ASSERT_EQ(::stat(features_file_.c_str(), &before), 0);

  start_shim("restarted.log");
  ASSERT_TRUE(
      wait_until([&] { return shim_->output().find(kUnchanged) != std::string::npos; }, 15s))
      << shim_->output();
  struct stat after {};
  ASSERT_EQ(::stat(features_file_.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
  EXPECT_EQ(count(shim_->output(), kWritten), 0u) << shim_->output();
}

TEST_F(NodeFeaturesProcessTest, WithoutTheFlagNothingIsWritten) {
  shim_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{binary_path("k8s-shim/xpu-k8s-shim").string(), "--bus-address",
                               bus_.address(), "device-plugin", "--plugin-dir",
                               plugin_dir_.string()},
      dir_.path() / "shim.log");
  ASSERT_TRUE(
      wait_until([&] { return shim_->output().find("xpud is present") != std::string::npos; }, 15s))
      << shim_->output();
  shim_->signal(SIGTERM);
  EXPECT_EQ(shim_->wait(10s), 0) << shim_->output();
  EXPECT_TRUE(fs::is_empty(features_dir_));
  EXPECT_EQ(shim_->output().find("node-feature-discovery"), std::string::npos);
}

}  // namespace
