#include "k8s-shim/device_plugin/container_allocation.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/names.h"
#include "k8s-shim/device_plugin/vfio_resource.h"
#include "k8s-shim/printable.h"

namespace shim {

xpu::Result<std::vector<PluginDevice>> requested_devices(
    const ResourceState& state, const std::vector<std::string>& device_ids) {
  if (device_ids.empty()) return xpu::Error{"no device IDs requested"};
  std::vector<PluginDevice> requested;
  std::set<std::string> seen;
  for (const auto& id : device_ids) {
    // IDs come from the kubelet's request and go into the log and the gRPC status: escaped.
    auto shown = [&id] { return printable_excerpt(id); };
    if (!seen.insert(id).second) return xpu::Error{"device '" + shown() + "' is requested twice"};
    auto it = std::find_if(state.devices.begin(), state.devices.end(),
                           [&id](const PluginDevice& d) { return d.id == id; });
    if (it == state.devices.end())
      return xpu::Error{"device '" + shown() + "' is not a " + state.resource_name +
                        " device of this node"};
    // A function on vfio-pci is no card: its ID (the PCI address) names it.
    if (!it->healthy)
      return xpu::Error{"device '" + shown() + "'" +
                        (state.vfio ? "" : " (" + xpu::names::device_name(it->index) + ")") +
                        " is Unhealthy: " + it->unhealthy_reason};
    requested.push_back(*it);
  }
  return requested;
}

xpu::Result<ContainerAllocation> allocate_container(const ResourceState& state,
                                                    const std::vector<std::string>& device_ids,
                                                    CdiMode cdi) {
  if (state.vfio) return allocate_vfio_container(state, device_ids);
  auto requested = requested_devices(state, device_ids);
  if (!requested) return xpu::Error{requested.error()};
  ContainerAllocation allocation;
  allocation.granted = std::move(*requested);
  std::map<unsigned, std::uint64_t> units_on;  // card index -> units requested (memory form)
  for (const auto& device : allocation.granted) ++units_on[device.index];
  // Replicas of a shared card map back to the card: each card (and node) once.
  std::sort(allocation.granted.begin(), allocation.granted.end(),
            [](const PluginDevice& a, const PluginDevice& b) {
              return a.index != b.index ? a.index < b.index : a.replica < b.replica;
            });
  allocation.granted.erase(
      std::unique(allocation.granted.begin(), allocation.granted.end(),
                  [](const PluginDevice& a, const PluginDevice& b) { return a.index == b.index; }),
      allocation.granted.end());

  std::string indices;
  std::string uuids;
  std::set<std::string> nodes_given;
  bool control_needed = false;
  auto add_node = [&](const std::string& node) {
    if (nodes_given.insert(node).second)
      allocation.device_nodes.push_back(DeviceNode{node, node, "rw"});
  };
  for (const auto& device : allocation.granted) {
    if (device.virtual_function) {
      // A virtual function gets exactly the nodes xpud lists for it (checked when planned).
      for (const auto& node : device.device_nodes)
        if (node != xpu::names::kControlNode)
          add_node(node);
        else
          control_needed = true;
    } else {
      add_node(xpu::names::device_node(device.index));
      control_needed = true;
    }
    if (!indices.empty()) {
      indices += ',';
      uuids += ',';
    }
    indices += std::to_string(device.index);
    uuids += device.card_id.empty() ? device.id : device.card_id;
  }
  const std::string control(xpu::names::kControlNode);
  if (control_needed) add_node(control);
  allocation.envs.emplace(kVisibleDevicesEnv, indices);
  allocation.envs.emplace(kVendorRuntimeVisibleDevicesEnv, indices);
  allocation.envs.emplace(kUuidsEnv, uuids);
  if (state.memory_unit_bytes > 0) {
    // The runtime splits the limit evenly: the card with the fewest units bounds them all.
    // Units are distinct known devices, at most kMaxMemoryUnitsPerCard of at most 64 GiB (2^44
    // bytes in all) per card: overflowing 64 bits would take a million cards.
    std::uint64_t fewest = units_on.begin()->second;
    for (const auto& [index, units] : units_on) fewest = std::min(fewest, units);
    allocation.memory_limit_bytes = fewest * state.memory_unit_bytes * units_on.size();
    allocation.envs.emplace(kVendorRuntimeMemoryLimitEnv,
                            std::to_string(allocation.memory_limit_bytes));
  }
  if (cdi != CdiMode::kOff && allocation.granted.size() == 1) {
    const PluginDevice& card = allocation.granted.front();
    const std::string& uuid = card.card_id.empty() ? card.id : card.card_id;
    allocation.cdi_devices.push_back(xpu::names::cdi::qualified_name(
        xpu::names::cdi::is_uuid_name(uuid) ? uuid : std::to_string(card.index)));
    if (cdi == CdiMode::kOn) allocation.device_nodes.clear();
  }
  return allocation;
}

}  // namespace shim
