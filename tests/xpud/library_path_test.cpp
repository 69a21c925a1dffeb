// [xpuml] library as a list, seen from outside: xpud loads the first candidate that works, says
// which in its log, in the Manager's LibraryPath and in `xpuctl list`; with none, backend=auto
// serves from sysfs and the log names every candidate; a bad list stops start-up with file:line.
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

class LibraryPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_file(dir_.path() / "scenario", "devices 2\n");
    std::filesystem::create_directories(dir_.path() / "sys/bus/pci/devices");
  }

  void start(const std::string& backend, const std::string& libraries) {
    write_file(
        dir_.path() / "xpud.conf",
        "[daemon]\nbackend = " + backend +
            "\n[sampling]\ninterval_ms = 100\nrescan_interval_ms = 1000\n[xpuml]\nlibrary = " +
            libraries + "\n[sysfs]\nroot = " + dir_.path().string() + "\n");
    xpud_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{binary_path("xpud/xpud").string(), "--bus-address", bus_.address(),
                                 "--config", (dir_.path() / "xpud.conf").string()},
        dir_.path() / "xpud.log",
        std::map<std::string, std::string>{
            {"XPUML_FAKE_SCRIPT", (dir_.path() / "scenario").string()},
            {"NOTIFY_SOCKET", notify_.path()}});
    ASSERT_GE(notify_.wait_for("READY=1", 10s), 0) << xpud_->output();
  }

  std::string xpuctl(std::vector<std::string> args) {
    args.insert(args.begin(),
                {binary_path("xpuctl/xpuctl").string(), "--bus-address", bus_.address()});
    ChildProcess run(args, dir_.path() / "xpuctl.log");
    EXPECT_EQ(run.wait(10s), 0) << run.output();
    return run.output();
  }

  xpu::test::TempDir dir_;
  xpu::test::PrivateBus bus_;
  xpu::test::NotifySocket notify_{dir_.path() / "notify"};
  std::unique_ptr<ChildProcess> xpud_;
};

TEST_F(LibraryPathTest, TheFirstCandidateThatLoadsIsUsedAndShown) {
  const std::string missing = (dir_.path() / "usr/local/xpu/lib64/libxpuml.so.1").string();
  start("xpuml", missing + "   " FAKE_XPUML " libxpuml.so");
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});
  auto manager = client.manager_info();
  ASSERT_TRUE(manager) << manager.error();
  EXPECT_EQ(manager->backend, "xpuml");
  EXPECT_EQ(manager->library_path, FAKE_XPUML);
  EXPECT_NE(xpud_->output().find("libxpuml: using " FAKE_XPUML), std::string::npos)
      << xpud_->output();
  EXPECT_NE(xpuctl({"list"}).find("backend xpuml (" FAKE_XPUML ")"), std::string::npos);
  EXPECT_NE(xpuctl({"list", "--json"}).find("\"library_path\":\"" FAKE_XPUML "\""),
            std::string::npos);
}

TEST_F(LibraryPathTest, WithNoUsableCandidateAutoServesSysfsAndNamesEveryCandidate) {
  const std::string first = (dir_.path() / "a/libxpuml.so.1").string();
  const std::string second = (dir_.path() / "b/libxpuml.so.1").string();
  start("auto", first + " " + second + " libxpuml-not-installed.so.1");
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});
  auto manager = client.manager_info();
  ASSERT_TRUE(manager) << manager.error();
  EXPECT_EQ(manager->backend, "sysfs");
  EXPECT_EQ(manager->library_path, "") << "no library in use";
  const std::string log = xpud_->output();
  EXPECT_NE(log.find("backend auto: xpuml unavailable (no usable libxpuml among 3 candidates"),
            std::string::npos)
      << log;
  for (const auto& name : {first, second, std::string("libxpuml-not-installed.so.1")})
    EXPECT_NE(log.find(name), std::string::npos) << name << "\n" << log;
  EXPECT_EQ(xpuctl({"list"}).find("backend sysfs ("), std::string::npos);
}

TEST_F(LibraryPathTest, AutoShowsTheLibraryOnceTheDriverComes) {
  write_file(dir_.path() / "scenario", "fail xpumlInit DRIVER_NOT_LOADED\ndevices 2\n");
  start("auto", FAKE_XPUML);
  xpu::XpudClient client(xpu::ClientOptions{bus_.address(), 2s});
  auto manager = client.manager_info();
  ASSERT_TRUE(manager) << manager.error();
  EXPECT_EQ(manager->backend, "sysfs");
  EXPECT_EQ(manager->library_path, "");
  // The driver loads: the retry (after 1 s) initialises the same library.
  write_file(dir_.path() / "scenario.tmp", "devices 2\n");
  std::filesystem::rename(dir_.path() / "scenario.tmp", dir_.path() / "scenario");
  EXPECT_TRUE(wait_until(
      [&] {
        auto now = client.manager_info();
        return now && now->backend == "xpuml" && now->library_path == FAKE_XPUML;
      },
      15s))
      << xpud_->output();
}

TEST_F(LibraryPathTest, AnEntryThatIsNeitherAPathNorAFileNameStopsStartUpWithFileAndLine) {
  write_file(dir_.path() / "xpud.conf",
             "[daemon]\nbackend = xpuml\n[xpuml]\nlibrary = " FAKE_XPUML " lib/libxpuml.so.1\n");
  ChildProcess check({binary_path("xpud/xpud").string(), "--check-config", "--config",
                      (dir_.path() / "xpud.conf").string()},
                     dir_.path() / "check.log");
  EXPECT_NE(check.wait(10s), 0);
  EXPECT_NE(check.output().find(
                (dir_.path() / "xpud.conf").string() +
                ":4: bad value for xpuml.library: 'lib/libxpuml.so.1' is neither an absolute "
                "path nor a bare file name"),
            std::string::npos)
      << check.output();
}

}  // namespace
