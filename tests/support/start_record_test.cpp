// start_record.cpp marks a test program that starts a thread or another process, and the
// ThreadSanitizer pass builds only the programs marked (scripts/test.sh). A way of starting one
// that it missed would drop a test from that pass in silence, so each is checked here on a program
// linked as the tests are (start_record_probe), in a process of its own: a program is marked once.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>

#include "tests/support/child_process.h"

namespace xpu::test {
namespace {

class StartRecordTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Runs the probe with WHAT and a record directory of its own; whether it left its record.
  bool probe_recorded(const std::string& what) {
    const std::filesystem::path records = dir_.path() / what;
    std::filesystem::create_directories(records);
    ChildProcess probe({binary_path("tests/support/start_record_probe").string(), what},
                       dir_.path() / (what + ".log"),
                       {{"XPU_TEST_START_RECORD_DIR", records.string()}});
    const auto status = probe.wait(std::chrono::seconds(30));
    EXPECT_EQ(status, 0) << what << ": " << probe.output();
    return std::filesystem::exists(records / "start_record_probe");
  }

  TempDir dir_;
};

TEST_P(StartRecordTest, AProgramThatStartsOneIsRecorded) {
  EXPECT_TRUE(probe_recorded(GetParam())) << GetParam() << " left no record";
}

INSTANTIATE_TEST_SUITE_P(EveryWayOfStarting, StartRecordTest,
                         ::testing::Values("thread", "fork", "posix_spawn", "posix_spawnp", "popen",
                                           "system"));

TEST_F(StartRecordTest, AProgramThatStartsNothingIsNotRecorded) {
  EXPECT_FALSE(probe_recorded("nothing"));
}

TEST(StartRecord, ARecordThatCannotBeWrittenEndsTheProgramNamingIt) {
  TempDir dir;
  const std::filesystem::path missing = dir.path() / "missing";
  ChildProcess probe({binary_path("tests/support/start_record_probe").string(), "thread"},
                     dir.path() / "probe.log", {{"XPU_TEST_START_RECORD_DIR", missing.string()}});
  const auto status = probe.wait(std::chrono::seconds(30));
  EXPECT_EQ(status, 128 + SIGABRT);
  EXPECT_NE(probe.output().find("start_record: cannot create " +
                                (missing / "start_record_probe").string()),
            std::string::npos)
      << probe.output();
}

TEST(StartRecord, WithoutARecordDirectoryTheProgramRunsAsUsual) {
  TempDir dir;
  ChildProcess probe({binary_path("tests/support/start_record_probe").string(), "thread"},
                     dir.path() / "probe.log", {}, {"XPU_TEST_START_RECORD_DIR"});
  EXPECT_EQ(probe.wait(std::chrono::seconds(30)), 0) << probe.output();
}

}  // namespace
}  // namespace xpu::test
