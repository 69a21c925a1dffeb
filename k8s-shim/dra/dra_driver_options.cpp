#include "k8s-shim/dra/dra_driver_options.h"

#include <cstdlib>

#include "k8s-shim/dra/kube/quantity.h"

namespace shim::dra {
namespace {

auto path_option(std::string& target) {
  return [&target](std::string_view value) -> xpu::Status {
    if (value.empty() || value.front() != '/') return xpu::Error{"must be an absolute path"};
    target = std::string(value);
    return xpu::ok_status();
  };
}

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

xpu::Status validate_node_name(std::string_view name) {
  if (name.empty()) return xpu::Error{"a node name must not be empty"};
  if (name.size() > 253) return xpu::Error{"a node name has at most 253 characters"};
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  std::size_t label_start = 0;
  for (std::size_t i = 0; i <= name.size(); ++i) {
    if (i < name.size() && name[i] != '.') {
      if (!alnum(name[i]) && name[i] != '-')
        return xpu::Error{"'" + std::string(name) +
                          "' is not a node name (lower-case letters, digits, '-', '.')"};
      continue;
    }
    std::string_view label = name.substr(label_start, i - label_start);
    if (label.empty() || !alnum(label.front()) || !alnum(label.back()))
      return xpu::Error{"'" + std::string(name) +
                        "' is not a node name (each dot-separated part "
                        "starts and ends with a letter or digit)"};
    label_start = i + 1;
  }
  return xpu::ok_status();
}

void add_dra_driver_options(xpu::CommandLine& cli, DraDriverOptions& options) {
  add_xpud_grace_period_option(cli, options.xpud_grace_period);
  cli.add_option("node-name", "NAME",
                 "this node's name, the pool its cards are published in (default: $NODE_NAME)",
                 [&options](std::string_view value) -> xpu::Status {
                   if (auto status = validate_node_name(value); !status) return status;
                   options.node_name = std::string(value);
                   return xpu::ok_status();
                 });
  cli.add_option("plugin-dir", "DIR",
                 "the DRA service's socket and the checkpoint of prepared claims (default " +
                     std::string(kDefaultPluginDirectory) + ")",
                 path_option(options.plugin_dir));
  cli.add_option("registry-dir", "DIR",
                 "the kubelet's plugin registration directory (default " +
                     std::string(kDefaultRegistryDirectory) + ")",
                 path_option(options.registry_dir));
  cli.add_option("cdi-dir", "DIR",
                 "where each prepared claim's CDI spec is written (default " +
                     std::string(kDefaultCdiDirectory) + ")",
                 path_option(options.cdi_dir));
  cli.add_option(
      "device-taint-effect", "EFFECT",
      "the effect of an unhealthy card's taint in the ResourceSlice: NoSchedule "
      "(default: no new claim gets it) or None (only reported)",
      [&options](std::string_view value) { return parse_taint_effect(value, options.taints); });
  cli.add_option(
      "device-taint-no-execute", "KIND,...",
      "health reason kinds whose taint is NoExecute instead, so that the pods using "
      "the card are evicted (driver_fault, read_failures, driver_stalled, "
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
  cli.add_option("api-server", "URL",
                 "the Kubernetes API server (default: in-cluster, from KUBERNETES_SERVICE_HOST "
                 "and KUBERNETES_SERVICE_PORT)",
                 [&options](std::string_view value) -> xpu::Status {
                   if (!value.starts_with("https://") && !value.starts_with("http://"))
                     return xpu::Error{"must start with https:// or http://"};
                   options.api_server = std::string(value);
                   return xpu::ok_status();
                 });
  cli.add_option("api-token-file", "PATH",
                 "bearer token for the API server, re-read on every call (default: the pod's "
                 "service-account token)",
                 path_option(options.api_token_file));
  cli.add_option("api-ca-file", "PATH",
                 "CA bundle that signs the API server's certificate (default: the pod's "
                 "service-account CA)",
                 path_option(options.api_ca_file));
}

xpu::Status complete_dra_driver_options(
    DraDriverOptions& options,
    const std::function<std::optional<std::string>(std::string_view)>& getenv) {
  if (options.node_name.empty()) {
    auto env = getenv("NODE_NAME");
    if (!env || env->empty()) return xpu::Error{"no node name: pass --node-name or set NODE_NAME"};
    if (auto status = validate_node_name(*env); !status)
      return xpu::Error{"NODE_NAME: " + status.error()};
    options.node_name = *env;
  }
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
        return complete_dra_driver_options(
            driver, [](std::string_view name) -> std::optional<std::string> {
              const char* value = std::getenv(std::string(name).c_str());
              if (!value) return std::nullopt;
              return std::string(value);
            });
      });
}

}  // namespace shim::dra
