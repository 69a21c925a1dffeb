// What the device plugin advertises, decided from xpud's view alone (pure; no gRPC, no D-Bus).
//
// Resources and their sockets:
//  - default: one resource (`kunlunxin.com/xpu`, or --resource-name) on `kunlunxin-xpu.sock`;
//  - --resource-per-model: one resource per card model, `<domain>/<Model>` where the domain is
//    that of --resource-name (so `kunlunxin.com/R200` by default), on
//    `kunlunxin-xpu-<model in lower case>.sock`. Characters a resource name cannot hold become
//    '-'. Should two models still end up on the same socket name (`R200` and `r200`), the one
//    seen later gets `-<8 hex digits of a hash of its resource name>` appended; a resource keeps
//    its socket for the life of the process, and keeps being served (with no devices) when its
//    cards disappear, so the kubelet sees 0 rather than a vanished plugin.
// SR-IOV (--enable-sriov): virtual functions (xpud's IsVirtualFunction) are their own resource,
// `<domain>/vxpu` on `kunlunxin-vxpu.sock` (per model: `<domain>/<Model>-vxpu` on
// `kunlunxin-vxpu-<model>.sock`); without the flag they are left out (a notice, not a warning).
// A virtual function needs the device nodes xpud lists for it; it is left out without them.
// A physical function whose virtual functions are on (xpud's SriovEnabled) has no compute of its
// own and is never advertised, neither whole nor shared (a notice).
// Shared mode (share_replicas > 0): each physical card is advertised share_replicas times as
// `<domain>/xpu-shared` on `kunlunxin-xpu-shared.sock` (per model: `<domain>/<Model>-shared` on
// `kunlunxin-xpu-shared-<model>.sock`), device IDs `<uuid>::<replica>`, and the whole-card
// resource is not advertised at all: a card is either shared or exclusive.
// Its memory form (share_memory_unit_mib > 0, replacing the replicas) advertises each of those
// cards as floor(its memory / the unit) devices `<uuid>::m<k>` of `<domain>/vxpu-memory` on
// `kunlunxin-vxpu-memory.sock` (per model: `<domain>/<Model>-vxpu-memory` on
// `kunlunxin-vxpu-memory-<model>.sock`), so a pod asks for memory and Allocate bounds it
// (container_allocation.h). The name is HAMi's for Kunlunxin cards, but HAMi counts MiB where we
// count units: a MiB per device would make a 96 GiB card 98304 devices, more than the kubelet's
// messages carry. For the same reason a card gives at most kMaxMemoryUnitsPerCard units (a
// warning says when the cap cuts one short); a card whose memory xpud does not know gives none.
// Devices: ID = UUID, health from the view, topology = NUMA node (none when unknown). The view is
// the process's CardState: once xpud has been gone for the grace period it says every card is
// Unhealthy, and it is Healthy again as soon as xpud reports it so.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/xpud_types.h"
#include "k8s-shim/resource_name.h"  // kReplicaSeparator

namespace shim {

inline constexpr std::string_view kDefaultSocketName = "kunlunxin-xpu.sock";
inline constexpr std::string_view kVirtualFunctionSocketName = "kunlunxin-vxpu.sock";
inline constexpr std::string_view kSharedSocketName = "kunlunxin-xpu-shared.sock";
inline constexpr std::string_view kVirtualFunctionResource = "vxpu";  // after "<domain>/"
inline constexpr std::string_view kSharedResource = "xpu-shared";     // after "<domain>/"
inline constexpr std::string_view kSharedMemorySocketName = "kunlunxin-vxpu-memory.sock";
inline constexpr std::string_view kSharedMemoryResource = "vxpu-memory";  // after "<domain>/"
// Memory units one card may give. With 64 cards it keeps the kubelet's largest message to us
// (GetPreferredAllocation's available IDs, ~45 bytes each) under the server's 1 MiB bound;
// it still covers a 256 GiB card at the chart's default unit of 1 GiB.
inline constexpr unsigned kMaxMemoryUnitsPerCard = 256;

struct ResourceConfig {
  std::string resource_name{"kunlunxin.com/xpu"};  // validated
  bool per_model = false;
  bool enable_sriov = false;
  // Expected virtual functions per physical card (0: no expectation); only with enable_sriov.
  unsigned sriov_num_vfs = 0;
  // Shared mode: each physical card advertised this many times; 0 = exclusive cards.
  unsigned share_replicas = 0;
  // Shared mode's memory form: one device per this many MiB of a card; 0 = off. Set, it
  // replaces share_replicas.
  unsigned share_memory_unit_mib{};
};

struct PluginDevice {
  std::string id;        // UUID, or "<UUID>::<replica>" / "<UUID>::m<unit>" in shared mode
  std::string card_id;   // the card's UUID (== id except in shared mode)
  unsigned replica = 0;  // shared mode only: the replica, or in the memory form the unit
  bool virtual_function = false;
  // Virtual functions: the nodes xpud lists for it (checked: absolute paths under /dev/); the
  // VFIO resource's functions: /dev/vfio/<group> and /dev/vfio/vfio (vfio_resource.h).
  std::vector<std::string> device_nodes;
  unsigned index = 0;
  std::string model;
  int numa_node = -1;  // -1: unknown (no topology advertised)
  std::uint64_t memory_total_bytes = 0;
  std::vector<std::string> linked_ids;
  bool healthy = false;
  std::string unhealthy_reason;  // empty while healthy

  bool operator==(const PluginDevice&) const = default;
};

struct ResourceState {
  std::string resource_name;
  std::string socket_name;
  std::vector<PluginDevice> devices;  // ascending index (then replica)
  bool shared = false;                // devices are replicas of shared cards
  // Shared mode's memory form: the bytes each device stands for; 0 otherwise.
  std::uint64_t memory_unit_bytes{};
  // The functions on vfio-pci, for virtual machines (vfio_resource.h): IDs are PCI addresses.
  bool vfio{};

  bool operator==(const ResourceState&) const = default;
};

struct ResourcePlan {
  std::vector<ResourceState> resources;  // ascending resource name
  // Devices xpud reported that cannot be advertised, each with the reason, and an SR-IOV count
  // that differs from --sriov-num-vfs (warnings for the log).
  std::vector<std::string> problems;
  // Devices left out on purpose (virtual functions without --enable-sriov, physical functions
  // with SR-IOV on): info for the log.
  std::vector<std::string> notices;
};

// `known_sockets` (resource name -> socket name) are the resources already served: they keep
// their sockets and stay in the plan even without devices.
ResourcePlan plan_resources(const ResourceConfig& config, const xpu::DeviceView& view,
                            const std::map<std::string, std::string>& known_sockets);

// Socket name a per-model resource would like (before collisions are resolved).
std::string socket_name_for_model(std::string_view model);

// The warning for a virtual-function count other than sriov_num_vfs x physical cards, or empty.
std::string sriov_count_mismatch(const ResourceConfig& config, const xpu::DeviceView& view);

// Why a device node path from xpud cannot be handed to a container, or ok.
xpu::Status validate_device_node(std::string_view path);

}  // namespace shim
