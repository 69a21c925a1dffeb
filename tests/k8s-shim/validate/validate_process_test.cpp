// xpu-k8s-shim validate as the chart's test pod runs it: the report on stdout, the exit status
// helm reads (0 passed, 1 failed).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/child_process.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using xpu::test::ChildProcess;

class ValidateProcessTest : public ::testing::Test {
 protected:
  // Runs the role with XPU_VISIBLE_DEVICES set to `visible` (unset when nullopt).
  int run(std::optional<std::string> visible, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {xpu::test::binary_path("k8s-shim/xpu-k8s-shim").string(),
                                     "validate", "--device-dir", devices_.path().string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    std::map<std::string, std::string> env;
    std::vector<std::string> unset;
    if (visible)
      env["XPU_VISIBLE_DEVICES"] = *visible;
    else
      unset.push_back("XPU_VISIBLE_DEVICES");
    ChildProcess validator(argv, log_.path() / "validate.log", env, unset);
    const auto status = validator.wait(std::chrono::seconds(30));
    output_ = validator.output();
    return status.value_or(-1);
  }

  xpu::test::TempDir devices_;
  xpu::test::TempDir log_;
  std::string output_;
};

TEST_F(ValidateProcessTest, AHealthyAllocationPassesAndSaysWhatItChecked) {
  fs::create_symlink("/dev/null", devices_.path() / "xpu5");
  fs::create_symlink("/dev/null", devices_.path() / "xpuctrl");
  EXPECT_EQ(run("5", {"--expect-cards", "1"}), 0) << output_;
  EXPECT_THAT(output_, HasSubstr("ok: XPU_VISIBLE_DEVICES=5\n"));
  EXPECT_THAT(output_, HasSubstr("xpu5 is a character device\n"));
  EXPECT_THAT(output_, HasSubstr("xpu validation passed\n"));
}

TEST_F(ValidateProcessTest, AContainerWithoutCardsFailsWithTheReason) {
  EXPECT_EQ(run(std::nullopt), 1) << output_;
  EXPECT_THAT(output_,
              HasSubstr("FAILED: XPU_VISIBLE_DEVICES is not set: the container was given no card"));
  EXPECT_THAT(output_, HasSubstr("xpu validation FAILED\n"));
}

}  // namespace
