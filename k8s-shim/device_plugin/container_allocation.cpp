#include "k8s-shim/device_plugin/container_allocation.h"

#include <algorithm>
#include <set>

#include "common/names.h"

namespace shim {

xpu::Result<ContainerAllocation> allocate_container(const ResourceState& state,
                                                    const std::vector<std::string>& device_ids) {
  if (device_ids.empty()) return xpu::Error{"no device IDs requested"};
  ContainerAllocation allocation;
  std::set<std::string> seen;
  for (const auto& id : device_ids) {
    if (!seen.insert(id).second) return xpu::Error{"device '" + id + "' is requested twice"};
    auto it = std::find_if(state.devices.begin(), state.devices.end(),
                           [&id](const PluginDevice& d) { return d.id == id; });
    if (it == state.devices.end())
      return xpu::Error{"device '" + id + "' is not a " + state.resource_name + " device of this node"};
    if (!it->healthy)
      return xpu::Error{"device '" + id + "' (xpu" + std::to_string(it->index) + ") is Unhealthy: " +
                        it->unhealthy_reason};
    allocation.granted.push_back(*it);
  }
  std::sort(allocation.granted.begin(), allocation.granted.end(),
            [](const PluginDevice& a, const PluginDevice& b) { return a.index < b.index; });

  std::string indices;
  std::string uuids;
  for (const auto& device : allocation.granted) {
    const std::string node = xpu::names::device_node(device.index);
    allocation.device_nodes.push_back(DeviceNode{node, node, "rw"});
    if (!indices.empty()) {
      indices += ',';
      uuids += ',';
    }
    indices += std::to_string(device.index);
    uuids += device.id;
  }
  const std::string control(xpu::names::kControlNode);
  allocation.device_nodes.push_back(DeviceNode{control, control, "rw"});
  allocation.envs.emplace(kVisibleDevicesEnv, indices);
  allocation.envs.emplace(kUuidsEnv, uuids);
  return allocation;
}

}  // namespace shim
