// The validate role's flags as a user types them.
#include "k8s-shim/validate/validate_options.h"

#include <gtest/gtest.h>

namespace shim::validate {
namespace {

ValidateOptions parse(std::vector<std::string> args) {
  ShimOptions shim;
  return parse_validate_command_line(shim, args);
}

TEST(ValidateOptions, DefaultsCheckAnyNumberOfCardsUnderDev) {
  const auto options = parse({});
  EXPECT_FALSE(options.expect_cards);
  EXPECT_EQ(options.device_dir, "/dev");
}

TEST(ValidateOptions, ExpectedCardsAndTheDeviceDirectory) {
  const auto options = parse({"--expect-cards", "2", "--device-dir=/tmp/./devices"});
  EXPECT_EQ(options.expect_cards, 2u);
  EXPECT_EQ(options.device_dir, "/tmp/devices");
}

TEST(ValidateOptions, BadValuesAreUsageErrors) {
  EXPECT_EXIT(parse({"--expect-cards", "0"}), ::testing::ExitedWithCode(2),
              "--expect-cards: '0' is out of range \\[1, 256\\]");
  EXPECT_EXIT(parse({"--device-dir", "dev"}), ::testing::ExitedWithCode(2),
              "--device-dir: must be an absolute path");
}

}  // namespace
}  // namespace shim::validate
