// xpud's Vfio interface as its clients see it (xpuctl's vfio commands, the shim's VFIO
// resource): the Kunlunxin functions on vfio-pci, and root's Bind and Unbind. One-shot calls,
// each on a connection of its own; apart from XpudClient so that the cards' client stays as it is.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/xpud_types.h"

namespace xpu {

// One entry of Vfio.Devices.
struct VfioFunctionInfo {
  std::string pci_bus_id;  // "0000:3b:00.0"
  std::string pci_id;      // "1d22:3684"
  std::string iommu_group;  // "12": /dev/vfio/12
  std::string model;
  bool is_virtual_function = false;
  std::string physical_function;  // a VF's PF; empty for a PF
  int numa_node = -1;

  bool operator==(const VfioFunctionInfo&) const = default;
};

class XpudVfioClient {
 public:
  explicit XpudVfioClient(ClientOptions options) : options_(std::move(options)) {}

  // Vfio.Devices. An xpud without the interface answers an error naming it.
  Result<std::vector<VfioFunctionInfo>> list() const;
  // Vfio.Bind and Vfio.Unbind (root): wait up to `timeout` for xpud's answer, which comes once
  // the function has moved and xpud has discovered the cards again. The error carries xpud's
  // message and error name.
  Status bind(const std::string& pci_bus_id, std::chrono::milliseconds timeout) const;
  Status unbind(const std::string& pci_bus_id, std::chrono::milliseconds timeout) const;

 private:
  Status move(std::string_view member, const std::string& pci_bus_id,
              std::chrono::milliseconds timeout) const;

  ClientOptions options_;
};

}  // namespace xpu
