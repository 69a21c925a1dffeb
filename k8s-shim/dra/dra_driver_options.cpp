#include "k8s-shim/dra/dra_driver_options.h"

#include <cstdlib>
#include <utility>

#include "k8s-shim/dra/kube/quantity.h"
#include "k8s-shim/kube/api_server_flags.h"
#include "k8s-shim/node_status/handover_successor.h"
#include "k8s-shim/node_status/node_status_options.h"

namespace shim::dra {
namespace {

// A positive amount of memory: a Kubernetes quantity ("1Gi", "512Mi", "1073741824").
auto memory_option(std::int64_t& target) {
  return [&target](std::string_view value) -> xpu::Status {
    auto bytes = parse_quantity(value);
    if (!bytes) return xpu::Error{bytes.error()};
    if (*bytes <= 0) return xpu::Error{"must be more than 0 bytes"};
    target = *bytes;
    return xpu::ok_status();
  };
}

}  // namespace

xpu::Status validate_share_policy(const SharePolicy& shares) {
  if (shares.minimum <= 0 || shares.step <= 0)
    return xpu::Error{"--share-memory-minimum and --share-memory-step must be more than 0 bytes"};
  if (shares.default_memory < shares.minimum ||
      (shares.default_memory - shares.minimum) % shares.step != 0)
    return xpu::Error{"--share-memory-default (" + std::to_string(shares.default_memory) +
                      " bytes) must be the minimum (" + std::to_string(shares.minimum) +
                      ") plus a whole number of steps (" + std::to_string(shares.step) + ")"};
  return xpu::ok_status();
}

void add_dra_driver_options(xpu::CommandLine& cli, DraDriverOptions& options) {
  add_xpud_grace_period_option(cli, options.xpud_grace_period);
  add_held_cards_options(cli, options.held_cards);
  // As the exporter reads it: every resource the device plugin advertises is in the domain of its
  // --resource-name.
  add_device_plugin_resource_name_option(
      cli, options.resource_name,
      "cards pods hold through resources in its domain are not published");
  kube::add_node_name_option(
      cli, options.node_name,
      "this node's name, the pool its cards are published in (default: $NODE_NAME)");
  cli.add_option("plugin-dir", "DIR",
                 "the DRA service's socket and the checkpoint of prepared claims (default " +
                     std::string(kDefaultPluginDirectory) + ")",
                 absolute_path_option(options.plugin_dir));
  cli.add_option("registry-dir", "DIR",
                 "the kubelet's plugin registration directory (default " +
                     std::string(kDefaultRegistryDirectory) + ")",
                 absolute_path_option(options.registry_dir));
  cli.add_option("cdi-dir", "DIR",
                 "where each prepared claim's CDI spec is written (default " +
                     std::string(kDefaultCdiDirectory) + ")",
                 absolute_path_option(options.cdi_dir));
  cli.add_option(
      "device-taint-effect", "EFFECT",
      "the effect of an unhealthy card's taint in the ResourceSlice: NoSchedule "
      "(default: no new claim gets it) or None (only reported)",
      [&options](std::string_view value) { return parse_taint_effect(value, options.taints); });
  cli.add_option(
      "device-taint-no-execute", "KIND,...",
      "health reason kinds whose taint is NoExecute instead, so that the pods using "
      "the card are evicted (driver_fault, read_failures, driver_stalled, memory_not_released, "
      "pcie_fatal_error, pcie_nonfatal_error, pcie_link_downtrained, reset_failed, "
      "xpud_unreachable, unhealthy; default: none)",
      [&options](std::string_view value) { return parse_no_execute_kinds(value, options.taints); });
  cli.add_flag("memory-shares", &options.shares.enabled,
               "also publish each card as shareable by memory (DRA consumable capacity, "
               "Kubernetes 1.36 or later); see --share-memory-*");
  cli.add_option("share-memory-minimum", "QUANTITY",
                 "the least memory a share gets; smaller requests are raised to it (default 1Gi)",
                 memory_option(options.shares.minimum));
  cli.add_option("share-memory-step", "QUANTITY",
                 "shares are the minimum plus whole steps; requests are rounded up (default 1Gi)",
                 memory_option(options.shares.step));
  cli.add_option("share-memory-default", "QUANTITY",
                 "what a share request naming no amount gets (default 1Gi)",
                 memory_option(options.shares.default_memory));
  cli.add_option("share-enforcement", "WHO",
                 "who makes a share's memory-bounded cXPU instance: xpud (OCI hooks in the "
                 "share's CDI spec call it; the default) or runtime (the vendor's container "
                 "runtime, from CXPU_CONTAINER_MEMORY_LIMIT)",
                 [&options](std::string_view value) -> xpu::Status {
                   if (value == "xpud")
                     options.shares.enforcement = ShareEnforcement::xpud;
                   else if (value == "runtime")
                     options.shares.enforcement = ShareEnforcement::runtime;
                   else
                     return xpu::Error{"must be xpud or runtime"};
                   return xpu::ok_status();
                 });
  cli.add_flag("no-device-metadata", &options.no_device_metadata,
               "write no device metadata files (KEP-5304: what each claim got, mounted read-only "
               "into its containers under /var/run/kubernetes.io/dra-device-attributes)");
  cli.add_option("daemon-set", "NAMESPACE/NAME",
                 "the DaemonSet that runs this driver: stopped while claims it prepared are held, "
                 "the driver keeps serving their unprepare until none is left when that "
                 "DaemonSet no longer places a pod on this node (default: stop at once)",
                 [&options](std::string_view value) -> xpu::Status {
                   auto ref = node_status::parse_daemonset_ref(value);
                   if (!ref) return xpu::Error{ref.error()};
                   options.daemon_set_namespace = std::move(ref->namespace_name);
                   options.daemon_set_name = std::move(ref->name);
                   return xpu::ok_status();
                 });
  kube::add_api_server_options(cli, options.api);
  node_status::add_node_status_flag(cli, options.node_status);
}

xpu::Status complete_dra_driver_options(
    DraDriverOptions& options,
    const std::function<std::optional<std::string>(std::string_view)>& getenv) {
  if (auto status = kube::complete_node_name(options.node_name, getenv); !status) return status;
  if (auto status = validate_share_policy(options.shares); !status) return status;
  if (options.plugin_dir == options.registry_dir)
    return xpu::Error{
        "--plugin-dir and --registry-dir must differ: the kubelet would take the "
        "DRA socket for a registration socket"};
  return xpu::ok_status();
}

DraDriverOptions parse_dra_driver_command_line(ShimOptions& options,
                                               std::span<const std::string> args) {
  return parse_role_options<DraDriverOptions>(
      options, args, "dra-driver", add_dra_driver_options, [](DraDriverOptions& driver) {
        return complete_dra_driver_options(driver, kube::process_environment);
      });
}

}  // namespace shim::dra
