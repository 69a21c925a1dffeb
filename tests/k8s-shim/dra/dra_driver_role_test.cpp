// The role's own pieces: its flags and the view it publishes (and prepares from) while xpud is
// away.
#include <gtest/gtest.h>

#include "k8s-shim/dra/dra_driver_options.h"
#include "k8s-shim/dra/published_view.h"
#include "tests/support/card_builder.h"

namespace shim::dra {
namespace {

using namespace std::chrono_literals;

std::optional<std::string> no_environment(std::string_view) {
  return std::nullopt;
}

TEST(DraDriverOptions, NodeNamesAreDnsSubdomains) {
  for (const char* good : {"node-1", "worker.example.com", "a", "0node"})
    EXPECT_TRUE(validate_node_name(good).ok()) << good;
  for (const char* bad : {"", "Node-1", "-node", "node-", "a..b", "node_1", "node/1", ".a"})
    EXPECT_FALSE(validate_node_name(bad).ok()) << bad;
  EXPECT_FALSE(validate_node_name(std::string(254, 'a')).ok());
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

xpu::DeviceView two_healthy_cards(bool present) {
  std::vector<xpu::DeviceInfo> cards = {xpu::test::card(0), xpu::test::card(1)};
  return present ? xpu::test::present(std::move(cards)) : xpu::test::absent(std::move(cards));
}

TEST(PublishedView, CardsStayAsLastReportedDuringTheGracePeriodThenTurnUnhealthy) {
  PublishedView published(10s);
  const auto start = PublishedView::Clock::time_point{} + 1h;
  published.update(two_healthy_cards(true), start);
  auto [present, no_expiry] = published.at(start + 1h);
  EXPECT_TRUE(present.devices[0].healthy);
  EXPECT_FALSE(no_expiry);

  published.update(two_healthy_cards(false), start + 1h);
  auto [during, expiry] = published.at(start + 1h + 9s);
  EXPECT_TRUE(during.devices[0].healthy && during.devices[1].healthy);
  ASSERT_TRUE(expiry);
  EXPECT_EQ(*expiry, start + 1h + 10s);

  // Another "absent" view does not restart the clock.
  published.update(two_healthy_cards(false), start + 1h + 5s);
  auto [after, none] = published.at(start + 1h + 10s);
  EXPECT_FALSE(after.devices[0].healthy || after.devices[1].healthy);
  EXPECT_NE(after.devices[0].health_reason.find("grace period"), std::string::npos);
  EXPECT_FALSE(none);

  published.update(two_healthy_cards(true), start + 2h);
  EXPECT_TRUE(published.at(start + 2h).first.devices[1].healthy);
}

}  // namespace
}  // namespace shim::dra
