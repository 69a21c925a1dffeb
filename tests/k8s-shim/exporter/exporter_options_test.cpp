// The exporter role's flags as a user types them: accepted values, and the one-line exit 2 for
// the rest.
#include "k8s-shim/exporter/exporter_options.h"

#include <gtest/gtest.h>

namespace shim::exporter {
namespace {

ExporterOptions parse(std::vector<std::string> args) {
  ShimOptions shim;
  return parse_exporter_command_line(shim, args);
}

TEST(ExporterOptions, DefaultsServeEveryAddressOnTheExportersPort) {
  auto options = parse({});
  EXPECT_EQ(options.listen.to_string(), ":9507");
  EXPECT_EQ(options.podresources_socket, "/var/lib/kubelet/pod-resources/kubelet.sock");
  EXPECT_EQ(options.resource_name, "kunlunxin.com/xpu");
  EXPECT_FALSE(options.resource_per_model);
  EXPECT_EQ(options.web_config_file, "");
  EXPECT_EQ(options.xpud_grace_period, std::chrono::seconds(10));
}

TEST(ExporterOptions, TheChartsFlagsAreAccepted) {
  auto options = parse({"--listen", "[::1]:9400", "--podresources-socket=/run/kubelet/pr.sock",
                        "--resource-name", "example.com/xpu", "--resource-per-model",
                        "--web-config-file", "/etc/xpu-exporter/web.yml"});
  EXPECT_EQ(options.listen.to_string(), "[::1]:9400");
  EXPECT_EQ(options.podresources_socket, "/run/kubelet/pr.sock");
  EXPECT_EQ(options.resource_name, "example.com/xpu");
  EXPECT_TRUE(options.resource_per_model);
  EXPECT_EQ(options.web_config_file, "/etc/xpu-exporter/web.yml");
}

// The device plugin's and the DRA driver's flag, so a node's roles can be given one value.
TEST(ExporterOptions, TheGracePeriodIsTheOtherRolesFlag) {
  EXPECT_EQ(parse({"--xpud-grace-period", "3"}).xpud_grace_period, std::chrono::seconds(3));
  EXPECT_EQ(parse({"--xpud-grace-period=0"}).xpud_grace_period, std::chrono::seconds(0));
}

TEST(ExporterOptions, BadValuesAreUsageErrors) {
  EXPECT_EXIT(parse({"--listen", "localhost:9507"}), ::testing::ExitedWithCode(2),
              "xpu-k8s-shim exporter: --listen: ");
  EXPECT_EXIT(parse({"--podresources-socket", ""}), ::testing::ExitedWithCode(2),
              "--podresources-socket: must not be empty");
  EXPECT_EXIT(parse({"--web-config-file="}), ::testing::ExitedWithCode(2),
              "--web-config-file: must not be empty");
  EXPECT_EXIT(parse({"--resource-name", "xpu"}), ::testing::ExitedWithCode(2), "--resource-name: ");
  EXPECT_EXIT(parse({"--xpud-grace-period", "86401"}), ::testing::ExitedWithCode(2),
              "--xpud-grace-period: ");
  EXPECT_EXIT(parse({"extra"}), ::testing::ExitedWithCode(2), "unexpected argument 'extra'");
}

}  // namespace
}  // namespace shim::exporter
