// The device-plugin role's own flags (besides the options every shim role takes).
#pragma once

#include <chrono>
#include <span>
#include <string>
#include <vector>

#include "common/command_line.h"
#include "k8s-shim/device_plugin/container_allocation.h"
#include "k8s-shim/device_plugin/node_features.h"
#include "k8s-shim/device_plugin/resource_plan.h"
#include "k8s-shim/kube/api_server_flags.h"
#include "k8s-shim/node_status/handover_successor.h"
#include "k8s-shim/pod_resources/held_cards_options.h"
#include "k8s-shim/resource_name.h"
#include "k8s-shim/shim_options.h"

namespace shim {

inline constexpr std::string_view kDefaultPluginDir = "/var/lib/kubelet/device-plugins/";
inline constexpr std::string_view kKubeletSocketName = "kubelet.sock";

struct DevicePluginOptions {
  std::string plugin_dir{kDefaultPluginDir};
  std::string resource_name{kDefaultResourceName};
  bool resource_per_model = false;
  std::chrono::seconds xpud_grace_period{kDefaultXpudGracePeriod};
  bool enable_sriov = false;
  unsigned sriov_num_vfs = 0;
  // Ask xpud (ConfigureVirtualFunctions) to give each physical card sriov_num_vfs virtual
  // functions where the node's count differs; the host decides whether it may
  // ([sriov] allow_cluster_reconfigure).
  bool reconfig_vxpu = false;
  bool enable_xpu_share = false;
  unsigned xpu_share_replicas = 4;
  // Whether --xpu-share-replicas was given: the memory form refuses it rather than ignore it.
  bool xpu_share_replicas_given{};
  // The memory form of shared mode: <domain>/vxpu-memory in units of this many MiB; 0 = off.
  unsigned xpu_share_memory_unit_mib{};
  // node-feature-discovery feature file for the node's XPU labels; empty: none written.
  std::string nfd_features_file{};
  // --cdi: whether Allocate names cards by CDI (container_allocation.h).
  CdiMode cdi = CdiMode::kAuto;
  // --node-status: the node's XPUHealthy condition and kunlunxin.com/xpu.ready label
  // (k8s-shim/node_status/README.md), written as this node (--node-name, else $NODE_NAME)
  // through the API server (--api-server and its token and CA; default: in-cluster).
  bool node_status = false;
  // --handover-taint: when the role stops, taint its node NoSchedule until the kubelet has
  // withdrawn its resources (k8s-shim/node_status/handover_taint.h). Needs --node-status's API
  // access and the right to change that one taint.
  bool handover_taint = false;
  // --handover-successor (repeated): the DaemonSets that may serve the node after this plugin;
  // the taint is raised only while one of them stays (handover_successor.h). None given: always.
  std::vector<node_status::DaemonSetRef> handover_successors{};
  std::string node_name{};
  kube::ApiServerFlags api{};
  // --podresources-socket, --held-cards-refresh: cards pods hold through DRA claims are not
  // advertised while they hold them.
  HeldCardsOptions held_cards{};
};

inline constexpr unsigned kMaxSriovNumVfs = 64;
inline constexpr unsigned kMaxShareReplicas = 64;
inline constexpr unsigned kMinShareMemoryUnitMib = 64;
inline constexpr unsigned kMaxShareMemoryUnitMib = 65536;

// --plugin-dir DIR, --resource-name NAME (validated), --resource-per-model,
// --xpud-grace-period SECONDS (0..86400), --enable-sriov, --sriov-num-vfs N (0..64),
// --reconfig-vxpu, --enable-xpu-share, --xpu-share-replicas N (1..64),
// --xpu-share-memory-unit-mib N (0: off, else 64..65536),
// --nfd-features-file PATH (empty: off; a dot file is refused, NFD would ignore it),
// --podresources-socket PATH, --held-cards-refresh SECONDS (0..3600).
void add_device_plugin_options(xpu::CommandLine& cli, DevicePluginOptions& options);

// Combinations the flags alone cannot check: --reconfig-vxpu needs --enable-sriov,
// --xpu-share-memory-unit-mib (other than 0) needs --enable-xpu-share.
xpu::Status check_device_plugin_options(const DevicePluginOptions& options);

// check_device_plugin_options, then the node name when --node-status needs one.
xpu::Status complete_device_plugin_options(DevicePluginOptions& options,
                                           const kube::Getenv& getenv);

// The role's whole command line: bad flags, values or combinations print one line and exit 2.
DevicePluginOptions parse_device_plugin_command_line(ShimOptions& options,
                                                     std::span<const std::string> args);

ResourceConfig resource_config(const DevicePluginOptions& options);
NodeFeatureOptions node_feature_options(const DevicePluginOptions& options, MemoryUnit memory_unit);

}  // namespace shim
