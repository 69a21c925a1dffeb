#include "k8s-shim/device_plugin/device_plugin_options.h"

#include "k8s-shim/device_plugin/node_feature_file.h"
#include "k8s-shim/node_status/handover_taint.h"
#include "k8s-shim/node_status/node_status_options.h"

namespace shim {
namespace {}

void add_device_plugin_options(xpu::CommandLine& cli, DevicePluginOptions& options) {
  cli.add_option("plugin-dir", "DIR",
                 "kubelet device-plugin directory (default " + std::string(kDefaultPluginDir) + ")",
                 [&options](std::string_view value) -> xpu::Status {
                   if (value.empty()) return xpu::Error{"must not be empty"};
                   options.plugin_dir = std::string(value);
                   return xpu::ok_status();
                 });
  cli.add_option("resource-name", "NAME",
                 "extended resource to advertise (default " + std::string(kDefaultResourceName) +
                     "); with --resource-per-model its domain prefixes each model",
                 [&options](std::string_view value) -> xpu::Status {
                   if (auto status = validate_extended_resource_name(value); !status) return status;
                   options.resource_name = std::string(value);
                   return xpu::ok_status();
                 });
  cli.add_flag("resource-per-model", &options.resource_per_model,
               "advertise one resource per card model (kunlunxin.com/R200, ...)");
  add_xpud_grace_period_option(cli, options.xpud_grace_period);
  add_held_cards_options(cli, options.held_cards);
  cli.add_flag("enable-sriov", &options.enable_sriov,
               "advertise SR-IOV virtual functions as <domain>/vxpu (otherwise they are left out)");
  cli.add_option("sriov-num-vfs", "N",
                 "virtual functions expected per card with --enable-sriov (0-64, 0: no check); "
                 "another count is logged as a warning",
                 [&options](std::string_view value) -> xpu::Status {
                   auto count = xpu::parse_uint(value, 0, kMaxSriovNumVfs);
                   if (!count) return xpu::Error{count.error()};
                   options.sriov_num_vfs = static_cast<unsigned>(*count);
                   return xpu::ok_status();
                 });
  cli.add_flag("reconfig-vxpu", &options.reconfig_vxpu,
               "needs --enable-sriov: ask xpud to give each physical card --sriov-num-vfs "
               "virtual functions where the node's count differs (only if the host allows it: "
               "[sriov] allow_cluster_reconfigure in xpud's configuration)");
  cli.add_flag("enable-xpu-share", &options.enable_xpu_share,
               "shared mode: advertise each card --xpu-share-replicas times as <domain>/xpu-shared "
               "instead of whole cards");
  cli.add_option("xpu-share-replicas", "N", "replicas per card in shared mode (1-64, default 4)",
                 [&options](std::string_view value) -> xpu::Status {
                   auto count = xpu::parse_uint(value, 1, kMaxShareReplicas);
                   if (!count) return xpu::Error{count.error()};
                   options.xpu_share_replicas = static_cast<unsigned>(*count);
                   options.xpu_share_replicas_given = true;
                   return xpu::ok_status();
                 });
  cli.add_option(
      "xpu-share-memory-unit-mib", "N",
      "shared mode's memory form (needs --enable-xpu-share; 0 = off, default): advertise each "
      "card's memory as <domain>/vxpu-memory in units of N MiB (64-65536; the chart's 1024 is "
      "GiB) instead of replicas, and bound a container's memory through the vendor's XPU "
      "container runtime (CXPU_CONTAINER_MEMORY_LIMIT). HAMi's vxpu-memory counts MiB; this "
      "counts units",
      [&options](std::string_view value) -> xpu::Status {
        auto mib = xpu::parse_uint(value, 0, kMaxShareMemoryUnitMib);
        if (!mib) return xpu::Error{mib.error()};
        if (*mib != 0 && *mib < kMinShareMemoryUnitMib)
          return xpu::Error{"'" + std::string(value) + "' is neither 0 (off) nor within " +
                            std::to_string(kMinShareMemoryUnitMib) + "-" +
                            std::to_string(kMaxShareMemoryUnitMib)};
        options.xpu_share_memory_unit_mib = static_cast<unsigned>(*mib);
        return xpu::ok_status();
      });
  cli.add_option(
      "nfd-features-file", "PATH",
      "write the node's XPU facts as node-feature-discovery labels (kunlunxin.com/xpu.*) "
      "to this file in NFD's features.d directory (default empty: off)",
      [&options](std::string_view value) -> xpu::Status {
        if (!value.empty())
          if (auto status = validate_feature_file_path(value); !status) return status;
        options.nfd_features_file = std::string(value);
        return xpu::ok_status();
      });
  cli.add_option(
      "cdi", "auto|true|false",
      "name a container's card by CDI (kunlunxin.com/xpu=<uuid>, from the spec xpud "
      "writes) in Allocate: auto (default) beside the raw device nodes, true instead of "
      "them, false not at all; a container with several cards always gets raw nodes",
      [&options](std::string_view value) -> xpu::Status {
        if (value == "auto")
          options.cdi = CdiMode::kAuto;
        else if (value == "true")
          options.cdi = CdiMode::kOn;
        else if (value == "false")
          options.cdi = CdiMode::kOff;
        else
          return xpu::Error{"'" + std::string(value) + "' is not one of auto, true, false"};
        return xpu::ok_status();
      });
  node_status::add_node_status_flag(cli, options.node_status);
  cli.add_flag("handover-taint", &options.handover_taint,
               "when stopping, taint this node " + std::string(node_status::kHandoverTaintKey) +
                   ":NoSchedule until the kubelet has withdrawn the plugin's resources, so that "
                   "no pod is bound to cards that are going (needs --node-status)");
  cli.add_option("handover-successor", "NAMESPACE/NAME",
                 "with --handover-taint, repeatable: a DaemonSet that may serve this node after "
                 "the plugin (its own; the DRA driver's). The taint is raised only while one of "
                 "them is there and not being deleted, so that an uninstall leaves no node "
                 "tainted (default: none given, always)",
                 [&options](std::string_view value) -> xpu::Status {
                   auto ref = node_status::parse_daemonset_ref(value);
                   if (!ref) return xpu::Error{ref.error()};
                   options.handover_successors.push_back(std::move(*ref));
                   return xpu::ok_status();
                 });
  kube::add_node_name_option(cli, options.node_name,
                             "this node's name, for --node-status (default: $NODE_NAME)");
  kube::add_api_server_options(cli, options.api);
}

xpu::Status check_device_plugin_options(const DevicePluginOptions& options) {
  if (options.reconfig_vxpu && !options.enable_sriov)
    return xpu::Error{"--reconfig-vxpu needs --enable-sriov"};
  if (options.xpu_share_memory_unit_mib > 0 && !options.enable_xpu_share)
    return xpu::Error{"--xpu-share-memory-unit-mib needs --enable-xpu-share"};
  if (options.handover_taint && !options.node_status)
    return xpu::Error{"--handover-taint needs --node-status (its API access)"};
  if (!options.handover_successors.empty() && !options.handover_taint)
    return xpu::Error{"--handover-successor needs --handover-taint"};
  if (options.xpu_share_memory_unit_mib > 0 && options.xpu_share_replicas_given)
    return xpu::Error{
        "--xpu-share-replicas and --xpu-share-memory-unit-mib are the two forms of shared mode "
        "(replicas of a card, or units of its memory): give one"};
  return xpu::ok_status();
}

xpu::Status complete_device_plugin_options(DevicePluginOptions& options,
                                           const kube::Getenv& getenv) {
  if (auto status = check_device_plugin_options(options); !status) return status;
  // The node name is only needed to write the node's status.
  if (options.node_status) return kube::complete_node_name(options.node_name, getenv);
  return xpu::ok_status();
}

DevicePluginOptions parse_device_plugin_command_line(ShimOptions& options,
                                                     std::span<const std::string> args) {
  return parse_role_options<DevicePluginOptions>(
      options, args, "device-plugin", add_device_plugin_options, [](DevicePluginOptions& plugin) {
        return complete_device_plugin_options(plugin, kube::process_environment);
      });
}

ResourceConfig resource_config(const DevicePluginOptions& options) {
  ResourceConfig config;
  config.resource_name = options.resource_name;
  config.per_model = options.resource_per_model;
  config.enable_sriov = options.enable_sriov;
  config.sriov_num_vfs = options.enable_sriov ? options.sriov_num_vfs : 0;
  const bool by_memory = options.enable_xpu_share && options.xpu_share_memory_unit_mib > 0;
  config.share_replicas = options.enable_xpu_share && !by_memory ? options.xpu_share_replicas : 0;
  config.share_memory_unit_mib = by_memory ? options.xpu_share_memory_unit_mib : 0;
  return config;
}

NodeFeatureOptions node_feature_options(const DevicePluginOptions& options,
                                        MemoryUnit memory_unit) {
  NodeFeatureOptions features;
  features.memory_unit = memory_unit;
  features.sriov = options.enable_sriov;
  const ResourceConfig config = resource_config(options);
  features.share_replicas = config.share_replicas;
  features.share_memory_unit_mib = config.share_memory_unit_mib;
  return features;
}

}  // namespace shim
