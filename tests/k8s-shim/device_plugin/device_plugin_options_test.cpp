// The device-plugin role's flags as a user types them: accepted values, and the one-line exit 2
// for the rest.
#include "k8s-shim/device_plugin/device_plugin_options.h"

#include <gtest/gtest.h>

namespace shim {
namespace {

DevicePluginOptions parse(std::vector<std::string> args) {
  ShimOptions shim;
  return parse_device_plugin_command_line(shim, args);
}

TEST(DevicePluginOptions, DefaultsAdvertiseWholeCardsOnly) {
  auto options = parse({});
  EXPECT_FALSE(options.enable_sriov);
  EXPECT_FALSE(options.enable_xpu_share);
  EXPECT_EQ(options.xpu_share_replicas, 4u);
  auto config = resource_config(options);
  EXPECT_EQ(config.resource_name, "kunlunxin.com/xpu");
  EXPECT_FALSE(config.enable_sriov);
  EXPECT_EQ(config.sriov_num_vfs, 0u);
  EXPECT_EQ(config.share_replicas, 0u);
}

TEST(DevicePluginOptions, TheChartsReservedFlagsAreAccepted) {
  // The argument list charts/xpu-k8s-shim renders with every reserved option on.
  auto options =
      parse({"--resource-per-model", "--resource-name", "example.com/xpu", "--enable-sriov",
             "--sriov-num-vfs", "4", "--reconfig-vxpu", "--enable-xpu-share"});
  EXPECT_TRUE(options.enable_sriov);
  EXPECT_EQ(options.sriov_num_vfs, 4u);
  EXPECT_TRUE(options.reconfig_vxpu);
  EXPECT_TRUE(options.enable_xpu_share);
  auto config = resource_config(options);
  EXPECT_TRUE(config.per_model);
  EXPECT_TRUE(config.enable_sriov);
  EXPECT_EQ(config.sriov_num_vfs, 4u);
  EXPECT_EQ(config.share_replicas, 4u);

  auto zero = parse(
      {"--enable-sriov", "--sriov-num-vfs", "0", "--enable-xpu-share", "--xpu-share-replicas=64"});
  EXPECT_EQ(zero.sriov_num_vfs, 0u);
  EXPECT_EQ(resource_config(zero).share_replicas, 64u);
}

TEST(DevicePluginOptions, CountsWithoutTheirModeDoNothing) {
  auto options = parse({"--sriov-num-vfs", "8", "--xpu-share-replicas", "2"});
  auto config = resource_config(options);
  EXPECT_EQ(config.sriov_num_vfs, 0u);
  EXPECT_EQ(config.share_replicas, 0u);
}

TEST(DevicePluginOptions, ReconfigWithoutSriovIsAUsageError) {
  EXPECT_FALSE(check_device_plugin_options(DevicePluginOptions{.reconfig_vxpu = true}).ok());
  EXPECT_EXIT(parse({"--reconfig-vxpu"}), ::testing::ExitedWithCode(2),
              "xpu-k8s-shim device-plugin: --reconfig-vxpu needs --enable-sriov");
}

TEST(DevicePluginOptions, OutOfRangeCountsAreUsageErrors) {
  EXPECT_EXIT(parse({"--enable-sriov", "--sriov-num-vfs", "65"}), ::testing::ExitedWithCode(2),
              "--sriov-num-vfs: '65' is out of range \\[0, 64\\]");
  EXPECT_EXIT(parse({"--enable-sriov", "--sriov-num-vfs", "-1"}), ::testing::ExitedWithCode(2),
              "--sriov-num-vfs: '-1' is not a non-negative integer");
  EXPECT_EXIT(parse({"--enable-xpu-share", "--xpu-share-replicas", "0"}),
              ::testing::ExitedWithCode(2),
              "--xpu-share-replicas: '0' is out of range \\[1, 64\\]");
  EXPECT_EXIT(parse({"--enable-xpu-share", "--xpu-share-replicas", "65"}),
              ::testing::ExitedWithCode(2),
              "--xpu-share-replicas: '65' is out of range \\[1, 64\\]");
  EXPECT_EXIT(parse({"--enable-sriov=yes"}), ::testing::ExitedWithCode(2),
              "option '--enable-sriov' takes no value");
}

TEST(DevicePluginOptions, MemoryUnitTurnsSharedModeToItsMemoryForm) {
  EXPECT_EQ(parse({}).xpu_share_memory_unit_mib, 0u);
  EXPECT_EQ(resource_config(parse({})).share_memory_unit_mib, 0u);

  auto options = parse({"--enable-xpu-share", "--xpu-share-memory-unit-mib", "1024"});
  EXPECT_EQ(options.xpu_share_memory_unit_mib, 1024u);
  auto config = resource_config(options);
  EXPECT_EQ(config.share_memory_unit_mib, 1024u);
  EXPECT_EQ(config.share_replicas, 0u);  // the memory form replaces the replicas
  auto features = node_feature_options(options, MemoryUnit::MiB);
  EXPECT_EQ(features.share_memory_unit_mib, 1024u);
  EXPECT_EQ(features.share_replicas, 0u);

  EXPECT_EQ(resource_config(parse({"--enable-xpu-share", "--xpu-share-memory-unit-mib=64"}))
                .share_memory_unit_mib,
            64u);
  EXPECT_EQ(resource_config(parse({"--enable-xpu-share", "--xpu-share-memory-unit-mib=65536"}))
                .share_memory_unit_mib,
            65536u);
  // 0 is off: the replica form, as without the flag.
  auto off = resource_config(
      parse({"--enable-xpu-share", "--xpu-share-memory-unit-mib", "0", "--xpu-share-replicas=3"}));
  EXPECT_EQ(off.share_memory_unit_mib, 0u);
  EXPECT_EQ(off.share_replicas, 3u);
  // 0 needs no shared mode either.
  EXPECT_EQ(resource_config(parse({"--xpu-share-memory-unit-mib", "0"})).share_memory_unit_mib, 0u);
}

TEST(DevicePluginOptions, BadMemoryUnitsAreUsageErrors) {
  EXPECT_FALSE(
      check_device_plugin_options(DevicePluginOptions{.xpu_share_memory_unit_mib = 1024}).ok());
  EXPECT_EXIT(parse({"--xpu-share-memory-unit-mib", "1024"}), ::testing::ExitedWithCode(2),
              "xpu-k8s-shim device-plugin: --xpu-share-memory-unit-mib needs --enable-xpu-share");
  // Replicas given beside the memory form would be ignored: refused instead.
  EXPECT_EXIT(parse({"--enable-xpu-share", "--xpu-share-replicas", "8",
                     "--xpu-share-memory-unit-mib", "1024"}),
              ::testing::ExitedWithCode(2),
              "--xpu-share-replicas and --xpu-share-memory-unit-mib are the two forms of shared "
              "mode \\(replicas of a card, or units of its memory\\): give one");
  EXPECT_EXIT(parse({"--enable-xpu-share", "--xpu-share-memory-unit-mib", "10"}),
              ::testing::ExitedWithCode(2),
              "--xpu-share-memory-unit-mib: '10' is neither 0 \\(off\\) nor within 64-65536");
  EXPECT_EXIT(parse({"--enable-xpu-share", "--xpu-share-memory-unit-mib", "63"}),
              ::testing::ExitedWithCode(2), "'63' is neither 0 \\(off\\) nor within 64-65536");
  EXPECT_EXIT(parse({"--enable-xpu-share", "--xpu-share-memory-unit-mib", "65537"}),
              ::testing::ExitedWithCode(2),
              "--xpu-share-memory-unit-mib: '65537' is out of range \\[0, 65536\\]");
  EXPECT_EXIT(parse({"--enable-xpu-share", "--xpu-share-memory-unit-mib", "-1"}),
              ::testing::ExitedWithCode(2),
              "--xpu-share-memory-unit-mib: '-1' is not a non-negative integer");
  EXPECT_EXIT(parse({"--enable-xpu-share", "--xpu-share-memory-unit-mib", "1GiB"}),
              ::testing::ExitedWithCode(2), "--xpu-share-memory-unit-mib: '1GiB'");
  EXPECT_EXIT(parse({"--enable-xpu-share", "--xpu-share-memory-unit-mib"}),
              ::testing::ExitedWithCode(2), "--xpu-share-memory-unit-mib");
}

TEST(DevicePluginOptions, NfdFeaturesFileIsOffUnlessNamed) {
  EXPECT_EQ(parse({}).nfd_features_file, "");
  EXPECT_EQ(parse({"--nfd-features-file", ""}).nfd_features_file, "");
  EXPECT_EQ(parse({"--nfd-features-file",
                   "/etc/kubernetes/node-feature-discovery/features.d/kunlunxin-xpu"})
                .nfd_features_file,
            "/etc/kubernetes/node-feature-discovery/features.d/kunlunxin-xpu");
  auto features = node_feature_options(
      parse({"--enable-sriov", "--enable-xpu-share", "--xpu-share-replicas", "2"}),
      MemoryUnit::GiB);
  EXPECT_EQ(features.memory_unit, MemoryUnit::GiB);
  EXPECT_TRUE(features.sriov);
  EXPECT_EQ(features.share_replicas, 2u);
  EXPECT_EQ(
      node_feature_options(parse({"--xpu-share-replicas", "2"}), MemoryUnit::MiB).share_replicas,
      0u);
}

TEST(DevicePluginOptions, NfdFeaturesFileThatNfdWouldNotReadIsAUsageError) {
  EXPECT_EXIT(parse({"--nfd-features-file", "/etc/features.d/.kunlunxin-xpu"}),
              ::testing::ExitedWithCode(2),
              "--nfd-features-file: '.kunlunxin-xpu' starts with '.', and node-feature-discovery "
              "ignores such files");
  EXPECT_EXIT(parse({"--nfd-features-file", "/etc/features.d/"}), ::testing::ExitedWithCode(2),
              "--nfd-features-file: '/etc/features.d/' names a directory, not a file");
  EXPECT_EXIT(parse({"--nfd-features-file", "/etc/features.d/.."}), ::testing::ExitedWithCode(2),
              "names a directory, not a file");
}

TEST(DevicePluginOptions, CdiIsAutoUnlessSetAndTakesOnlyItsThreeValues) {
  EXPECT_EQ(parse({}).cdi, CdiMode::kAuto);
  EXPECT_EQ(parse({"--cdi=auto"}).cdi, CdiMode::kAuto);
  EXPECT_EQ(parse({"--cdi=true"}).cdi, CdiMode::kOn);
  EXPECT_EQ(parse({"--cdi", "false"}).cdi, CdiMode::kOff);
  EXPECT_EXIT(parse({"--cdi=yes"}), ::testing::ExitedWithCode(2),
              "--cdi: 'yes' is not one of auto, true, false");
  EXPECT_EXIT(parse({"--cdi="}), ::testing::ExitedWithCode(2),
              "--cdi: '' is not one of auto, true, false");
}

TEST(DevicePluginOptions, NodeStatusTakesTheNodeNameFromTheFlagOrNodeName) {
  // The chart passes --node-status and sets NODE_NAME from spec.nodeName.
  auto options = parse({"--node-status", "--node-name", "node-a"});
  EXPECT_TRUE(options.node_status);
  EXPECT_EQ(options.node_name, "node-a");
  DevicePluginOptions from_env;
  from_env.node_status = true;
  auto env = [](std::string_view name) -> std::optional<std::string> {
    if (name == "NODE_NAME") return "node-b";
    return std::nullopt;
  };
  ASSERT_TRUE(complete_device_plugin_options(from_env, env).ok());
  EXPECT_EQ(from_env.node_name, "node-b");
  // Off, no node name is needed.
  DevicePluginOptions off;
  EXPECT_TRUE(complete_device_plugin_options(off, [](std::string_view) {
                return std::optional<std::string>();
              }).ok());
}

TEST(DevicePluginOptions, NodeStatusWithoutANodeNameIsRefused) {
  DevicePluginOptions options;
  options.node_status = true;
  auto none = complete_device_plugin_options(
      options, [](std::string_view) { return std::optional<std::string>(); });
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error(), "no node name: pass --node-name or set NODE_NAME");
  auto bad = complete_device_plugin_options(
      options, [](std::string_view) { return std::optional<std::string>("Node_A"); });
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("NODE_NAME: 'Node_A' is not a node name"), std::string::npos)
      << bad.error();
  EXPECT_EXIT(parse({"--node-status", "--node-name", "../x"}), ::testing::ExitedWithCode(2),
              "is not a node name");
}

TEST(DevicePluginOptions, PodResourcesIsAskedEveryTwoSecondsUnlessSetOrOff) {
  using namespace std::chrono_literals;
  auto defaults = parse({});
  EXPECT_EQ(defaults.held_cards.podresources_socket, "/var/lib/kubelet/pod-resources/kubelet.sock");
  EXPECT_EQ(defaults.held_cards.refresh, 2s);
  auto set = parse({"--podresources-socket", "/run/pr.sock", "--held-cards-refresh", "0"});
  EXPECT_EQ(set.held_cards.podresources_socket, "/run/pr.sock");
  EXPECT_EQ(set.held_cards.refresh, 0s);
}

TEST(DevicePluginOptionsDeathTest, AHeldCardsRefreshOutOfRangeExitsWithUsage) {
  for (const char* bad : {"-1", "2s", "3601"})
    EXPECT_EXIT(parse({"--held-cards-refresh", bad}), ::testing::ExitedWithCode(2),
                "--held-cards-refresh")
        << bad;
  EXPECT_EXIT(parse({"--podresources-socket", ""}), ::testing::ExitedWithCode(2),
              "--podresources-socket");
}

TEST(DevicePluginOptions, HandoverSuccessorsAreRepeatedNamespaceSlashName) {
  EXPECT_TRUE(parse({}).handover_successors.empty());
  auto options = parse({"--node-status", "--node-name", "node-1", "--handover-taint",
                        "--handover-successor", "kube-system/xpu-device-plugin-daemonset",
                        "--handover-successor=kube-system/xpu-dra-driver"});
  EXPECT_EQ(options.handover_successors,
            (std::vector<node_status::DaemonSetRef>{{"kube-system", "xpu-device-plugin-daemonset"},
                                                    {"kube-system", "xpu-dra-driver"}}));
  EXPECT_EXIT(parse({"--node-status", "--node-name", "node-1", "--handover-taint",
                     "--handover-successor", "xpu-dra-driver"}),
              ::testing::ExitedWithCode(2),
              "--handover-successor: 'xpu-dra-driver' is not NAMESPACE/NAME");
  EXPECT_EXIT(parse({"--handover-successor", "kube-system/xpu-dra-driver"}),
              ::testing::ExitedWithCode(2), "--handover-successor needs --handover-taint");
}

}  // namespace
}  // namespace shim
