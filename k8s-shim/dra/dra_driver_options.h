// The dra-driver role's own flags (besides the options every shim role takes).
#pragma once

#include <chrono>
#include <cstdlib>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/command_line.h"
#include "k8s-shim/dra/kubelet/plugin_directory.h"
#include "k8s-shim/dra/share_policy.h"
#include "k8s-shim/dra/slices/device_taints.h"
#include "k8s-shim/kube/api_server_flags.h"
#include "k8s-shim/pod_resources/held_cards_options.h"
#include "k8s-shim/resource_name.h"
#include "k8s-shim/shim_options.h"

namespace shim::dra {

struct DraDriverOptions {
  std::string node_name;  // --node-name, else $NODE_NAME: the pool and the slice's node
  std::string plugin_dir{kDefaultPluginDirectory};      // the DRA socket and the checkpoint
  std::string registry_dir{kDefaultRegistryDirectory};  // the kubelet's plugin registration
  std::string cdi_dir{kDefaultCdiDirectory};            // per-claim CDI specs
  // The API server; empty: in-cluster (KUBERNETES_SERVICE_HOST/PORT, the pod's token and CA).
  kube::ApiServerFlags api;
  // --node-status: the node's XPUHealthy condition and kunlunxin.com/xpu.ready label
  // (k8s-shim/node_status/README.md).
  bool node_status = false;
  // xpud gone this long: every card unhealthy in the slice, the health stream and prepare alike.
  std::chrono::seconds xpud_grace_period{kDefaultXpudGracePeriod};
  // --device-taint-effect, --device-taint-no-execute: what an unhealthy card's taint does.
  TaintPolicy taints;
  // --memory-shares and --share-memory-{minimum,step,default}.
  SharePolicy shares;
  // --daemon-set NAMESPACE/NAME: the DaemonSet that runs this driver. Asked, when the driver
  // stops with claims prepared, whether it is replaced on this node or leaving it (then it
  // drains: driver_departure.h). Empty: it never drains (it stops at once, as outside a chart).
  std::string daemon_set_namespace;
  std::string daemon_set_name;
  // --no-device-metadata: no device metadata files (KEP-5304), which are otherwise written for
  // each prepared claim and mounted into its containers.
  bool no_device_metadata = false;
  // --podresources-socket, --held-cards-refresh: cards pods hold through the device plugin are
  // left out of the slice while they hold them.
  HeldCardsOptions held_cards{};
  // --resource-name: the device plugin's; its pod-resources entries in that name's domain hold
  // cards.
  std::string resource_name{kDefaultResourceName};
};

// The minimum and step are positive and the default is the minimum plus whole steps, as the API
// server requires of a requestPolicy's default.
xpu::Status validate_share_policy(const SharePolicy& shares);

void add_dra_driver_options(xpu::CommandLine& cli, DraDriverOptions& options);

// Fills what the flags left empty from the environment (NODE_NAME) and checks the combination.
xpu::Status complete_dra_driver_options(
    DraDriverOptions& options,
    const std::function<std::optional<std::string>(std::string_view)>& getenv);

// The role's whole command line: bad flags, values or combinations print one line and exit 2.
DraDriverOptions parse_dra_driver_command_line(ShimOptions& options,
                                               std::span<const std::string> args);

}  // namespace shim::dra
