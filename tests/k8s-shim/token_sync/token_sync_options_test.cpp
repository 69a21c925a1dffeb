// The token-sync role's flags as a user types them: accepted values, and the one-line exit 2 for
// the rest.
#include "k8s-shim/token_sync/token_sync_options.h"

#include <gtest/gtest.h>

namespace shim::token_sync {
namespace {

TokenSyncOptions parse(std::vector<std::string> args) {
  ShimOptions shim;
  return parse_token_sync_command_line(shim, args);
}

TEST(TokenSyncOptions, DefaultsCopyThePodsVolumeToTheRuntimeEveryMinute) {
  auto options = parse({});
  EXPECT_EQ(options.config.source_dir, "/var/run/secrets/kubernetes.io/serviceaccount");
  EXPECT_EQ(options.config.dest_dir, "/xpu-runtime/auth");
  EXPECT_EQ(options.interval, std::chrono::seconds(60));
}

TEST(TokenSyncOptions, DirectoriesAreMadeAbsoluteAndLoseTheirTrailingSlash) {
  auto options = parse({"--source-dir", "/a/./b/", "--dest-dir=/c/d/../e", "--interval", "86400"});
  EXPECT_EQ(options.config.source_dir, "/a/b");
  EXPECT_EQ(options.config.dest_dir, "/c/e");
  EXPECT_EQ(options.interval, std::chrono::hours(24));
  EXPECT_TRUE(parse({"--source-dir", "relative"}).config.source_dir.is_absolute());
}

TEST(TokenSyncOptions, BadValuesAndTheSameDirectoryTwiceAreUsageErrors) {
  EXPECT_EXIT(parse({"--interval", "0"}), ::testing::ExitedWithCode(2),
              "--interval: '0' is out of range \\[1, 86400\\]");
  EXPECT_EXIT(parse({"--source-dir", ""}), ::testing::ExitedWithCode(2),
              "--source-dir: must not be empty");
  EXPECT_EXIT(parse({"--dest-dir", "/a\tb"}), ::testing::ExitedWithCode(2),
              "--dest-dir: contains a control character");
  EXPECT_EXIT(parse({"--source-dir", "/x/", "--dest-dir", "/x"}), ::testing::ExitedWithCode(2),
              "xpu-k8s-shim token-sync: --source-dir and --dest-dir name the same directory");
}

}  // namespace
}  // namespace shim::token_sync
