// Cards as the tests build them: a card as xpud lists it (xpu::DeviceInfo) or as a backend
// discovers it (xpud::DeviceIdentity), and the watcher's view of a node's cards.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/xpud_types.h"
#include "xpud/device.h"

namespace xpu::test {

// card(3) is card 3 as most tests want it: an R200 named "xpu3" with UUID "uuid-3", healthy,
// every other field unknown (the structs' defaults). Each setter sets one field and returns the
// builder, so a test names only what it is about: card(1).model("R300").unhealthy("thermal trip").
class CardBuilder {
 public:
  explicit CardBuilder(unsigned index);

  CardBuilder& name(std::string name);
  CardBuilder& uuid(std::string uuid);
  CardBuilder& serial(std::string serial);
  CardBuilder& model(std::string model);
  CardBuilder& pci_bus_id(std::string pci_bus_id);
  CardBuilder& pcie_root(std::string pcie_root);
  CardBuilder& numa_node(int numa_node);
  CardBuilder& memory_total_bytes(std::uint64_t bytes);
  CardBuilder& device_nodes(std::vector<std::string> nodes);
  CardBuilder& linked_devices(std::vector<unsigned> indices);
  CardBuilder& healthy(bool healthy);
  CardBuilder& health_reason(std::string reason);
  CardBuilder& unhealthy(std::string reason = "");
  CardBuilder& health_reason_kind(std::string kind);
  CardBuilder& virtual_function(bool virtual_function = true);

  // What the watcher hands the shim.
  operator DeviceInfo() const { return info_; }
  // What a backend discovers: the identity fields of the same card (no name, no health).
  operator xpud::DeviceIdentity() const;

 private:
  DeviceInfo info_;
};

inline CardBuilder card(unsigned index) {
  return CardBuilder(index);
}

// A function on vfio-pci as Vfio.Devices lists it, at `pci_bus_id` in IOMMU group `group`, on
// NUMA node 1: an R200 card (1d22:3684), or with `vf` a virtual function (KL2-VF, 1d22:3685) of
// 0000:3b:00.0.
VfioFunctionInfo on_vfio(std::string pci_bus_id, std::string group, bool vf = false);

// The watcher's view while xpud answers: these cards, and the driver version xpud reports.
DeviceView present(std::vector<DeviceInfo> devices, std::string driver_version = "");
// The view once xpud has gone: the last known cards, nothing else to go by.
DeviceView absent(std::vector<DeviceInfo> devices);

}  // namespace xpu::test
