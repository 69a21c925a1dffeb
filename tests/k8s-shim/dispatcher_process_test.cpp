// xpu-k8s-shim as operators and the chart run it: it reads the command line as far as the role,
// then runs that role's own program (libexec/xpu-k8s-shim/ROLE beside its bin/) in its place.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <filesystem>

#include "tests/support/child_process.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using xpu::test::ChildProcess;

constexpr std::array kRoles{"device-plugin", "exporter", "token-sync", "dra-driver", "validate"};

class DispatcherProcessTest : public ::testing::Test {
 protected:
  // Runs `program` with `args` to its end; returns the exit status, the output in output_.
  int run(const fs::path& program, std::vector<std::string> args) {
    args.insert(args.begin(), program.string());
    ChildProcess child(args, temp_.path() / "output.log");
    const auto status = child.wait(std::chrono::seconds(30));
    output_ = child.output();
    return status.value_or(-1);
  }
  int run_shim(std::vector<std::string> args) { return run(shim_, std::move(args)); }

  fs::path shim_ = xpu::test::binary_path("k8s-shim/xpu-k8s-shim");
  xpu::test::TempDir temp_;
  std::string output_;
};

TEST_F(DispatcherProcessTest, HelpListsTheRolesAndVersionNamesTheProgram) {
  EXPECT_EQ(run_shim({"--help"}), 0) << output_;
  EXPECT_THAT(output_, HasSubstr("Usage: xpu-k8s-shim [OPTIONS] device-plugin|exporter|"));
  for (const char* role : kRoles) EXPECT_THAT(output_, HasSubstr("\n  " + std::string(role)));
  EXPECT_EQ(run_shim({"--version"}), 0) << output_;
  EXPECT_THAT(output_, HasSubstr("xpu-k8s-shim "));
}

TEST_F(DispatcherProcessTest, EachRoleAnswersFromItsOwnProgram) {
  // A role's options are known only to its program: its --help proves the dispatcher ran it,
  // with the common options given before the role passed along.
  for (const char* role : kRoles) {
    EXPECT_EQ(run_shim({"--log-level", "warn", role, "--help"}), 0) << role << ": " << output_;
    EXPECT_THAT(output_, HasSubstr("Usage: xpu-k8s-shim " + std::string(role) + " [OPTIONS]"));
  }
  EXPECT_EQ(run_shim({"exporter", "--no-such-flag"}), 2) << output_;
  EXPECT_THAT(output_, HasSubstr("xpu-k8s-shim exporter: unknown option '--no-such-flag'"));
}

TEST_F(DispatcherProcessTest, AMissingOrUnknownRoleIsAUsageError) {
  EXPECT_EQ(run_shim({}), 2) << output_;
  EXPECT_THAT(output_, HasSubstr("xpu-k8s-shim: missing role: device-plugin, exporter, "
                                 "token-sync, dra-driver or validate (try --help)"));
  EXPECT_EQ(run_shim({"--bus-address", "unix:path=/nowhere", "exporterr"}), 2) << output_;
  EXPECT_THAT(output_, HasSubstr("xpu-k8s-shim: unknown role 'exporterr' (try --help)"));
  EXPECT_EQ(run_shim({"--log-level", "loud", "exporter"}), 2) << output_;
  EXPECT_THAT(output_, HasSubstr("--log-level"));
}

TEST_F(DispatcherProcessTest, ADispatcherWithoutItsRoleProgramsSaysWhereItLooked) {
  const fs::path copy = temp_.path() / "bin" / "xpu-k8s-shim";
  fs::create_directories(copy.parent_path());
  fs::copy_file(shim_, copy);
  EXPECT_EQ(run(copy, {"exporter"}), 1) << output_;
  EXPECT_THAT(output_, HasSubstr("xpu-k8s-shim: fatal: cannot run the exporter program " +
                                 (temp_.path() / "libexec/xpu-k8s-shim/exporter").string() +
                                 ": No such file or directory"));
}

TEST_F(DispatcherProcessTest, ARoleProgramRunsOnlyItsOwnRole) {
  const fs::path exporter = shim_.parent_path().parent_path() / "libexec/xpu-k8s-shim/exporter";
  EXPECT_EQ(run(exporter, {"validate"}), 2) << output_;
  EXPECT_THAT(output_, HasSubstr("xpu-k8s-shim: this is the program of role 'exporter', given "
                                 "role 'validate'"));
}

}  // namespace
