// Conversions between the device plugin's plain types and the kubelet's v1beta1 messages, so the
// gRPC service stays a thin shell around pure decisions.
#pragma once

#include <deviceplugin_v1beta1.pb.h>

#include "k8s-shim/device_plugin/container_allocation.h"
#include "k8s-shim/device_plugin/resource_plan.h"
#include "k8s-shim/device_plugin/topology_allocator.h"

namespace shim {

inline constexpr std::string_view kDevicePluginApiVersion = "v1beta1";

v1beta1::DevicePluginOptions plugin_options();
v1beta1::ListAndWatchResponse to_list_and_watch(const ResourceState& state);
TopologyAllocator to_topology(const ResourceState& state);
AllocationRequest to_allocation_request(
    const v1beta1::ContainerPreferredAllocationRequest& request);
void fill_container_response(const ContainerAllocation& allocation,
                             v1beta1::ContainerAllocateResponse& response);

}  // namespace shim
