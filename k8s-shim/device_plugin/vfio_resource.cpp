#include "k8s-shim/device_plugin/vfio_resource.h"

#include <algorithm>

#include "common/names.h"
#include "k8s-shim/resource_name.h"

namespace shim {
namespace {

// The container (IOMMU context) every group is used through (Documentation/driver-api/vfio.rst).
constexpr std::string_view kVfioContainerNode = "/dev/vfio/vfio";

}  // namespace

std::set<std::string> vfio_bus_ids(const xpu::DeviceView& view) {
  std::set<std::string> ids;
  for (const auto& function : view.vfio_functions) ids.insert(function.pci_bus_id);
  return ids;
}

void plan_vfio_devices(const xpu::DeviceView& view, ResourceState& state,
                       std::vector<std::string>& problems) {
  state.vfio = true;
  std::set<std::string> seen;
  for (const auto& function : view.vfio_functions) {
    const std::string where = "function " + function.pci_bus_id + " on vfio-pci";
    if (auto status = validate_device_id(function.pci_bus_id); !status) {
      problems.push_back(where + " is not advertised: " + status.error());
      continue;
    }
    if (!xpu::names::vfio::is_iommu_group(function.iommu_group)) {
      problems.push_back(where + " is not advertised: IOMMU group '" + function.iommu_group +
                         "' is not a group number");
      continue;
    }
    if (!seen.insert(function.pci_bus_id).second) {
      problems.push_back(where + " is not advertised: xpud lists it twice");
      continue;
    }
    PluginDevice device;
    device.id = function.pci_bus_id;
    device.card_id = function.pci_bus_id;
    device.model = function.model;
    device.virtual_function = function.is_virtual_function;
    device.device_nodes = {"/dev/vfio/" + function.iommu_group, std::string(kVfioContainerNode)};
    device.numa_node = function.numa_node < 0 ? -1 : function.numa_node;
    // vfio-pci holds it whether xpud answers or not; while xpud is away the list is the last
    // one it gave (the watcher keeps it), as for the cards.
    device.healthy = true;
    state.devices.push_back(std::move(device));
  }
  std::sort(state.devices.begin(), state.devices.end(),
            [](const PluginDevice& a, const PluginDevice& b) { return a.id < b.id; });
}

xpu::Result<ContainerAllocation> allocate_vfio_container(
    const ResourceState& state, const std::vector<std::string>& device_ids) {
  auto requested = requested_devices(state, device_ids);
  if (!requested) return xpu::Error{requested.error()};
  ContainerAllocation allocation;
  allocation.granted = std::move(*requested);
  std::sort(allocation.granted.begin(), allocation.granted.end(),
            [](const PluginDevice& a, const PluginDevice& b) { return a.id < b.id; });
  std::string addresses;
  std::set<std::string> nodes;
  for (const auto& device : allocation.granted) {
    addresses += (addresses.empty() ? "" : ",") + device.id;
    for (const auto& node : device.device_nodes)
      if (nodes.insert(node).second)
        allocation.device_nodes.push_back(DeviceNode{node, node, "mrw"});
  }
  // /dev/vfio/vfio, the container every group is used through, after the groups.
  std::stable_partition(allocation.device_nodes.begin(), allocation.device_nodes.end(),
                        [](const DeviceNode& n) { return n.host_path != kVfioContainerNode; });
  allocation.envs.emplace(xpu::names::vfio::pci_resource_env(state.resource_name), addresses);
  return allocation;
}

}  // namespace shim
