#include "tests/support/card_builder.h"

namespace xpu::test {

CardBuilder::CardBuilder(unsigned index) {
  info_.index = index;
  info_.name = "xpu" + std::to_string(index);
  info_.uuid = "uuid-" + std::to_string(index);
  info_.model = "R200";
  info_.healthy = true;
}

CardBuilder& CardBuilder::name(std::string name) {
  info_.name = std::move(name);
  return *this;
}

CardBuilder& CardBuilder::uuid(std::string uuid) {
  info_.uuid = std::move(uuid);
  return *this;
}

CardBuilder& CardBuilder::serial(std::string serial) {
  info_.serial = std::move(serial);
  return *this;
}

CardBuilder& CardBuilder::model(std::string model) {
  info_.model = std::move(model);
  return *this;
}

CardBuilder& CardBuilder::pci_bus_id(std::string pci_bus_id) {
  info_.pci_bus_id = std::move(pci_bus_id);
  return *this;
}

CardBuilder& CardBuilder::pcie_root(std::string pcie_root) {
  info_.pcie_root = std::move(pcie_root);
  return *this;
}

CardBuilder& CardBuilder::numa_node(int numa_node) {
  info_.numa_node = numa_node;
  return *this;
}

CardBuilder& CardBuilder::memory_total_bytes(std::uint64_t bytes) {
  info_.memory_total_bytes = bytes;
  return *this;
}

CardBuilder& CardBuilder::device_nodes(std::vector<std::string> nodes) {
  info_.device_nodes = std::move(nodes);
  return *this;
}

CardBuilder& CardBuilder::linked_devices(std::vector<unsigned> indices) {
  info_.linked_devices = std::move(indices);
  return *this;
}

CardBuilder& CardBuilder::healthy(bool healthy) {
  info_.healthy = healthy;
  return *this;
}

CardBuilder& CardBuilder::health_reason(std::string reason) {
  info_.health_reason = std::move(reason);
  return *this;
}

CardBuilder& CardBuilder::health_reason_kind(std::string kind) {
  info_.health_reason_kind = std::move(kind);
  return *this;
}

CardBuilder& CardBuilder::unhealthy(std::string reason) {
  info_.healthy = false;
  return health_reason(std::move(reason));
}

CardBuilder& CardBuilder::virtual_function(bool virtual_function) {
  info_.is_virtual_function = virtual_function;
  return *this;
}

CardBuilder::operator xpud::DeviceIdentity() const {
  xpud::DeviceIdentity id;
  id.index = info_.index;
  id.uuid = info_.uuid;
  id.serial = info_.serial;
  id.model = info_.model;
  id.pci_bus_id = info_.pci_bus_id;
  id.pcie_root = info_.pcie_root;
  id.numa_node = info_.numa_node;
  id.memory_total_bytes = info_.memory_total_bytes;
  id.device_nodes = info_.device_nodes;
  id.linked_devices = info_.linked_devices;
  id.is_virtual_function = info_.is_virtual_function;
  id.sriov_enabled = info_.sriov_enabled;
  return id;
}

VfioFunctionInfo on_vfio(std::string pci_bus_id, std::string group, bool vf) {
  return {std::move(pci_bus_id),
          vf ? "1d22:3685" : "1d22:3684",
          std::move(group),
          vf ? "KL2-VF" : "R200",
          vf,
          vf ? "0000:3b:00.0" : "",
          1};
}

DeviceView present(std::vector<DeviceInfo> devices, std::string driver_version) {
  DeviceView view;
  view.xpud_present = true;
  view.manager.driver_version = std::move(driver_version);
  view.devices = std::move(devices);
  return view;
}

DeviceView absent(std::vector<DeviceInfo> devices) {
  DeviceView view;
  view.devices = std::move(devices);
  return view;
}

}  // namespace xpu::test
