// The role's own pieces: its flags. The view it publishes (and prepares from) while xpud is away
// is the process's CardState (tests/k8s-shim/cards/card_state_test.cpp).
#include <gtest/gtest.h>

#include "k8s-shim/dra/dra_driver_options.h"

namespace shim::dra {
namespace {

using namespace std::chrono_literals;

std::optional<std::string> no_environment(std::string_view) {
  return std::nullopt;
}

TEST(DraDriverOptions, NodeNamesAreDnsSubdomains) {
  for (const char* good : {"node-1", "worker.example.com", "a", "0node"})
    EXPECT_TRUE(kube::validate_node_name(good).ok()) << good;
  for (const char* bad : {"", "Node-1", "-node", "node-", "a..b", "node_1", "node/1", ".a"})
    EXPECT_FALSE(kube::validate_node_name(bad).ok()) << bad;
  EXPECT_FALSE(kube::validate_node_name(std::string(254, 'a')).ok());
}

TEST(DraDriverOptions, TheNodeNameComesFromTheFlagOrNodeName) {
  DraDriverOptions options;
  auto missing = complete_dra_driver_options(options, no_environment);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("--node-name"), std::string::npos) << missing.error();

  auto env = [](std::string_view name) -> std::optional<std::string> {
    if (name == "NODE_NAME") return std::string("gpu-node-7");
    return std::nullopt;
  };
  ASSERT_TRUE(complete_dra_driver_options(options, env).ok());
  EXPECT_EQ(options.node_name, "gpu-node-7");

  DraDriverOptions flagged;
  flagged.node_name = "from-flag";
  ASSERT_TRUE(complete_dra_driver_options(flagged, env).ok());
  EXPECT_EQ(flagged.node_name, "from-flag");

  DraDriverOptions bad_env;
  auto invalid = complete_dra_driver_options(
      bad_env,
      [](std::string_view) -> std::optional<std::string> { return std::string("Not A Node"); });
  ASSERT_FALSE(invalid.ok());
  EXPECT_NE(invalid.error().find("NODE_NAME"), std::string::npos) << invalid.error();
}

TEST(DraDriverOptions, ThePluginAndRegistryDirectoriesMustDiffer) {
  DraDriverOptions options;
  options.node_name = "node-1";
  options.registry_dir = options.plugin_dir;
  EXPECT_FALSE(complete_dra_driver_options(options, no_environment).ok());
}

TEST(DraDriverOptions, TheGracePeriodIsTheDevicePluginsFlag) {
  ShimOptions shim;
  std::vector<std::string> args = {"--node-name", "node-1", "--xpud-grace-period", "3"};
  EXPECT_EQ(parse_dra_driver_command_line(shim, args).xpud_grace_period, 3s);
  std::vector<std::string> defaults = {"--node-name", "node-1"};
  EXPECT_EQ(parse_dra_driver_command_line(shim, defaults).xpud_grace_period, 10s);
}

TEST(DraDriverOptionsDeathTest, AGracePeriodThatIsNoWholeNumberOfSecondsExitsWithUsage) {
  for (const char* bad : {"-1", "ten", "86401"}) {
    ShimOptions shim;
    std::vector<std::string> args = {"--node-name", "node-1", "--xpud-grace-period", bad};
    EXPECT_EXIT(parse_dra_driver_command_line(shim, args), ::testing::ExitedWithCode(2),
                "--xpud-grace-period")
        << bad;
  }
}

TEST(DraDriverOptions, MemorySharesAreOffAndTakeQuantities) {
  ShimOptions shim;
  std::vector<std::string> defaults = {"--node-name", "node-1"};
  EXPECT_EQ(parse_dra_driver_command_line(shim, defaults).shares, SharePolicy{});
  EXPECT_FALSE(SharePolicy{}.enabled);

  std::vector<std::string> args = {"--node-name",
                                   "node-1",
                                   "--memory-shares",
                                   "--share-memory-minimum",
                                   "2Gi",
                                   "--share-memory-step",
                                   "512Mi",
                                   "--share-memory-default",
                                   "3Gi"};
  const SharePolicy shares = parse_dra_driver_command_line(shim, args).shares;
  EXPECT_TRUE(shares.enabled);
  EXPECT_EQ(shares.minimum, 2 * kGiB);
  EXPECT_EQ(shares.step, kGiB / 2);
  EXPECT_EQ(shares.default_memory, 3 * kGiB);
}

TEST(DraDriverOptions, TheShareDefaultIsTheMinimumPlusWholeSteps) {
  EXPECT_TRUE(validate_share_policy(
                  {.enabled = true, .minimum = kGiB, .step = kGiB, .default_memory = 4 * kGiB})
                  .ok());
  auto off_step = validate_share_policy(
      {.enabled = true, .minimum = kGiB, .step = 2 * kGiB, .default_memory = 2 * kGiB});
  ASSERT_FALSE(off_step.ok());
  EXPECT_NE(off_step.error().find("--share-memory-default"), std::string::npos) << off_step.error();
  EXPECT_FALSE(validate_share_policy(
                   {.enabled = true, .minimum = 2 * kGiB, .step = kGiB, .default_memory = kGiB})
                   .ok());
}

TEST(DraDriverOptionsDeathTest, AShareAmountThatIsNoPositiveQuantityExitsWithUsage) {
  for (const char* bad : {"0", "-1Gi", "lots", "0.5"}) {
    ShimOptions shim;
    std::vector<std::string> args = {"--node-name", "node-1", "--share-memory-minimum", bad};
    EXPECT_EXIT(parse_dra_driver_command_line(shim, args), ::testing::ExitedWithCode(2),
                "--share-memory-minimum")
        << bad;
  }
  ShimOptions shim;
  std::vector<std::string> off_step = {
      "--node-name", "node-1", "--share-memory-step", "2Gi", "--share-memory-default", "2Gi"};
  EXPECT_EXIT(parse_dra_driver_command_line(shim, off_step), ::testing::ExitedWithCode(2),
              "--share-memory-default");
}

TEST(DraDriverOptions, CardsHeldThroughTheDevicePluginAreReadInItsResourceNamesDomain) {
  ShimOptions shim;
  std::vector<std::string> defaults = {"--node-name", "node-1"};
  auto options = parse_dra_driver_command_line(shim, defaults);
  EXPECT_EQ(options.resource_name, "kunlunxin.com/xpu");
  EXPECT_EQ(options.held_cards.refresh, 2s);
  EXPECT_EQ(options.held_cards.podresources_socket, "/var/lib/kubelet/pod-resources/kubelet.sock");
  std::vector<std::string> set = {
      "--node-name",          "node-1", "--resource-name",       "example.org/accel",
      "--held-cards-refresh", "5",      "--podresources-socket", "/pr.sock"};
  options = parse_dra_driver_command_line(shim, set);
  EXPECT_EQ(options.resource_name, "example.org/accel");
  EXPECT_EQ(options.held_cards.refresh, 5s);
  EXPECT_EQ(options.held_cards.podresources_socket, "/pr.sock");
}

TEST(DraDriverOptionsDeathTest, ABadResourceNameOrRefreshExitsWithUsage) {
  for (const auto& [flag, bad] : std::vector<std::pair<std::string, std::string>>{
           {"--resource-name", "no-domain"}, {"--held-cards-refresh", "ten"}}) {
    ShimOptions shim;
    std::vector<std::string> args = {"--node-name", "node-1", flag, bad};
    EXPECT_EXIT(parse_dra_driver_command_line(shim, args), ::testing::ExitedWithCode(2), flag)
        << bad;
  }
}

}  // namespace
}  // namespace shim::dra
