#include "k8s-shim/device_plugin/kubelet_messages.h"

#include "common/names.h"

namespace shim {

v1beta1::DevicePluginOptions plugin_options() {
  v1beta1::DevicePluginOptions options;
  options.set_pre_start_required(false);
  options.set_get_preferred_allocation_available(true);
  return options;
}

v1beta1::ListAndWatchResponse to_list_and_watch(const ResourceState& state) {
  v1beta1::ListAndWatchResponse response;
  for (const auto& device : state.devices) {
    auto* out = response.add_devices();
    out->set_id(device.id);
    out->set_health(std::string(device.healthy ? xpu::names::kHealthy : xpu::names::kUnhealthy));
    // No topology at all when the node is unknown: the kubelet's topology manager then treats
    // the device as usable from any NUMA node instead of a wrong one.
    if (device.numa_node >= 0) out->mutable_topology()->add_nodes()->set_id(device.numa_node);
  }
  return response;
}

TopologyAllocator to_topology(const ResourceState& state) {
  std::vector<TopologyDevice> devices;
  devices.reserve(state.devices.size());
  for (const auto& device : state.devices)
    devices.push_back(TopologyDevice{device.id, device.index, device.numa_node, device.linked_ids});
  return TopologyAllocator(std::move(devices));
}

AllocationRequest to_allocation_request(
    const v1beta1::ContainerPreferredAllocationRequest& request) {
  AllocationRequest out;
  out.available.assign(request.available_deviceids().begin(), request.available_deviceids().end());
  out.must_include.assign(request.must_include_deviceids().begin(),
                          request.must_include_deviceids().end());
  out.size = request.allocation_size();
  return out;
}

void fill_container_response(const ContainerAllocation& allocation,
                             v1beta1::ContainerAllocateResponse& response) {
  for (const auto& node : allocation.device_nodes) {
    auto* spec = response.add_devices();
    spec->set_container_path(node.container_path);
    spec->set_host_path(node.host_path);
    spec->set_permissions(node.permissions);
  }
  for (const auto& [key, value] : allocation.envs) (*response.mutable_envs())[key] = value;
  for (const auto& name : allocation.cdi_devices) response.add_cdi_devices()->set_name(name);
}

}  // namespace shim
