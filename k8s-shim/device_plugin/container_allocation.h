// What a container gets for the cards the kubelet grants it (Allocate), decided from the
// resource's current state alone (pure).
//
// Each granted card gives its /dev/xpuN, and the container gets /dev/xpuctrl once, all "rw" with
// the container path equal to the host path. XPU_VISIBLE_DEVICES lists the host indices in
// ascending order, CXPU_VISIBLE_DEVICES the same (the vendor's runtime injects exactly those
// cards instead of the "all" its base images set); KUNLUNXIN_XPU_UUIDS the UUIDs in that order.
// Any unknown, unhealthy or repeated ID, or an empty request, fails the whole container request
// with a message naming it.
// An SR-IOV virtual function gets the nodes xpud lists for it (its index in XPU_VISIBLE_DEVICES,
// like a card). Replicas of a shared card map back to the card: its node, index and UUID appear
// once however many of its replicas the container holds.
// Memory units (the memory form of shared mode) map back to their cards the same way, and the
// container also gets CXPU_CONTAINER_MEMORY_LIMIT: the units it holds on the card it holds the
// fewest of, times the unit, times its number of cards. The vendor's runtime (src/cli/cxpu.c of
// zxw3221/libxpu-container) divides that variable evenly over the container's cards, so no card
// is given more than was granted on it; units beyond the fewest are granted but unusable (the
// preferred allocation keeps a container's units on one card for that reason). Without that
// runtime nothing enforces the bound.
//
// CDI (--cdi, cdi_devices of the response): a container granted one card also gets that card's
// CDI name, kunlunxin.com/xpu=<uuid> (its index when the UUID is not a CDI device name, which
// xpud's spec then leaves out too), from the spec xpud writes; with CdiMode::kOn the raw device
// nodes are left out, with kAuto they stay beside it for runtimes without CDI. A container
// granted several cards gets the raw nodes only, whatever the mode: CDI replaces a variable that
// several devices set, so per-card names would leave XPU_VISIBLE_DEVICES (and the others)
// naming the last card instead of all of them (a runtime applies CDI edits after the envs of
// this response).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/names.h"
#include "common/result.h"
#include "k8s-shim/device_plugin/resource_plan.h"

namespace shim {

inline constexpr std::string_view kVisibleDevicesEnv = xpu::names::kVisibleDevicesEnv;
inline constexpr std::string_view kVendorRuntimeVisibleDevicesEnv =
    xpu::names::kVendorRuntimeVisibleDevicesEnv;
inline constexpr std::string_view kUuidsEnv = xpu::names::kUuidsEnv;
inline constexpr std::string_view kVendorRuntimeMemoryLimitEnv =
    xpu::names::kVendorRuntimeMemoryLimitEnv;

struct DeviceNode {
  std::string container_path;
  std::string host_path;
  std::string permissions;

  bool operator==(const DeviceNode&) const = default;
};

// --cdi: false (kOff) raw device nodes only; true (kOn) CDI names where they carry the same
// environment, raw nodes elsewhere; auto (kAuto) both.
enum class CdiMode { kAuto, kOn, kOff };

struct ContainerAllocation {
  std::vector<DeviceNode> device_nodes;
  std::vector<std::string> cdi_devices;  // fully qualified: kunlunxin.com/xpu=<name>
  std::map<std::string, std::string> envs;
  std::vector<PluginDevice> granted;  // one per card, ascending index, for the log
  // Memory form of shared mode: the bytes CXPU_CONTAINER_MEMORY_LIMIT grants; 0 otherwise.
  std::uint64_t memory_limit_bytes{};
};

// The devices `device_ids` name, in the order asked, each checked: an empty request, an ID asked
// twice, one that is not the resource's, or an unhealthy device fails the request with a message
// naming it. Shared by the cards' Allocate and the VFIO resource's.
xpu::Result<std::vector<PluginDevice>> requested_devices(
    const ResourceState& state, const std::vector<std::string>& device_ids);

xpu::Result<ContainerAllocation> allocate_container(const ResourceState& state,
                                                    const std::vector<std::string>& device_ids,
                                                    CdiMode cdi = CdiMode::kOff);

}  // namespace shim
