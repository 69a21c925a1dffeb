#include "common/xpud_properties.h"

#include <algorithm>

#include <sdbus-c++/sdbus-c++.h>
#include <spdlog/spdlog.h>

#include "common/names.h"

namespace xpu {
namespace {

namespace property = names::property;

using ManagedObjects = std::map<sdbus::ObjectPath, std::map<std::string, PropertyMap>>;

template <typename T>
bool get_property(const PropertyMap& properties, std::string_view key, T& out) {
  auto it = properties.find(std::string(key));
  if (it == properties.end() || !it->second.containsValueOfType<T>()) return false;
  out = it->second.get<T>();
  return true;
}

}  // namespace

Result<DeviceInfo> parse_device(const PropertyMap& p) {
  DeviceInfo d;
  uint32_t index = 0;
  int32_t numa = -1;
  uint64_t memory = 0;
  std::vector<uint32_t> linked;
  std::string health;
  bool ok = get_property(p, property::kIndex, index) && get_property(p, property::kName, d.name) &&
            get_property(p, property::kUuid, d.uuid) &&
            get_property(p, property::kSerial, d.serial) &&
            get_property(p, property::kModel, d.model) &&
            get_property(p, property::kPciBusId, d.pci_bus_id) &&
            get_property(p, property::kNumaNode, numa) &&
            get_property(p, property::kMemoryTotalBytes, memory) &&
            get_property(p, property::kDeviceNodes, d.device_nodes) &&
            get_property(p, property::kLinkedDevices, linked) &&
            get_property(p, property::kHealth, health) &&
            get_property(p, property::kHealthReason, d.health_reason) &&
            get_property(p, property::kIsVirtualFunction, d.is_virtual_function);
  if (!ok) return Error{"missing or mistyped property"};
  // Added later than the rest: optional.
  get_property(p, property::kHealthReasonKind, d.health_reason_kind);
  get_property(p, property::kHealthTransitions, d.health_transitions);
  get_property(p, property::kSriovEnabled, d.sriov_enabled);
  get_property(p, property::kPcieRoot, d.pcie_root);
  get_property(p, property::kPhysicalFunction, d.physical_function);
  get_property(p, property::kHealthWarnings, d.health_warnings);
  get_property(p, property::kResets, d.resets);
  if (d.uuid.empty()) return Error{"empty Uuid"};
  if (health != names::kHealthy && health != names::kUnhealthy)
    return Error{"Health is '" + health + "'"};
  d.index = index;
  d.numa_node = numa;
  d.memory_total_bytes = memory;
  d.linked_devices.assign(linked.begin(), linked.end());
  d.healthy = health == names::kHealthy;
  return d;
}

Result<ManagerInfo> parse_manager(const PropertyMap& properties) {
  ManagerInfo info;
  uint32_t count = 0, healthy = 0;
  if (!get_property(properties, property::kVersion, info.version) ||
      !get_property(properties, property::kBackend, info.backend) ||
      !get_property(properties, property::kDriverVersion, info.driver_version) ||
      !get_property(properties, property::kDeviceCount, count) ||
      !get_property(properties, property::kHealthyDeviceCount, healthy))
    return Error{"xpud's Manager properties are missing or mistyped"};
  info.device_count = count;
  info.healthy_device_count = healthy;
  // Optional: an xpud from before the property has none; mistyped counts as none.
  if (properties.count(std::string(property::kLibraryPath)) != 0 &&
      !get_property(properties, property::kLibraryPath, info.library_path))
    info.library_path.clear();
  if (!get_property(properties, property::kInstanceHook, info.instance_hook))
    info.instance_hook.clear();
  if (!get_property(properties, property::kShareInstancesSupported, info.share_instances_supported))
    info.share_instances_supported = false;
  return info;
}

Result<std::vector<DeviceInfo>> fetch_devices(sdbus::IConnection& connection,
                                              std::chrono::milliseconds timeout) {
  auto proxy = sdbus::createProxy(connection, std::string(names::kBusName),
                                  std::string(names::kManagerPath));
  ManagedObjects objects;
  proxy->callMethod("GetManagedObjects")
      .onInterface(std::string(names::bus::kObjectManagerInterface))
      .withTimeout(timeout)
      .storeResultsTo(objects);
  std::vector<DeviceInfo> devices;
  for (const auto& [path, interfaces] : objects) {
    auto it = interfaces.find(std::string(names::kDeviceInterface));
    if (it == interfaces.end()) continue;
    auto device = parse_device(it->second);
    if (!device) {
      spdlog::warn("ignoring device object {}: {}", std::string(path), device.error());
      continue;
    }
    devices.push_back(std::move(*device));
  }
  std::sort(devices.begin(), devices.end(),
            [](const DeviceInfo& a, const DeviceInfo& b) { return a.index < b.index; });
  return devices;
}

Result<ManagerInfo> fetch_manager(sdbus::IConnection& connection,
                                  std::chrono::milliseconds timeout) {
  auto proxy = sdbus::createProxy(connection, std::string(names::kBusName),
                                  std::string(names::kManagerPath));
  PropertyMap properties;
  proxy->callMethod("GetAll")
      .onInterface(std::string(names::bus::kPropertiesInterface))
      .withTimeout(timeout)
      .withArguments(std::string(names::kManagerInterface))
      .storeResultsTo(properties);
  return parse_manager(properties);
}

}  // namespace xpu
