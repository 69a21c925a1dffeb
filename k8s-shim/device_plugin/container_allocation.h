// What a container gets for the cards the kubelet grants it (Allocate), decided from the
// resource's current state alone (pure).
//
// Each granted card gives its /dev/xpuN, and the container gets /dev/xpuctrl once, all "rw" with
// the container path equal to the host path. XPU_VISIBLE_DEVICES lists the host indices in
// ascending order; KUNLUNXIN_XPU_UUIDS the UUIDs in the same order. Any unknown, unhealthy or
// repeated ID, or an empty request, fails the whole container request with a message naming it.
// An SR-IOV virtual function gets the nodes xpud lists for it (its index in XPU_VISIBLE_DEVICES,
// like a card). Replicas of a shared card map back to the card: its node, index and UUID appear
// once however many of its replicas the container holds.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "k8s-shim/device_plugin/resource_plan.h"

namespace shim {

inline constexpr std::string_view kVisibleDevicesEnv = "XPU_VISIBLE_DEVICES";
inline constexpr std::string_view kUuidsEnv = "KUNLUNXIN_XPU_UUIDS";

struct DeviceNode {
  std::string container_path;
  std::string host_path;
  std::string permissions;

  bool operator==(const DeviceNode&) const = default;
};

struct ContainerAllocation {
  std::vector<DeviceNode> device_nodes;
  std::map<std::string, std::string> envs;
  std::vector<PluginDevice> granted;  // one per card, ascending index, for the log
};

xpu::Result<ContainerAllocation> allocate_container(const ResourceState& state,
                                                    const std::vector<std::string>& device_ids);

}  // namespace shim
