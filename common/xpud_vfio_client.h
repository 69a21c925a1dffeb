// xpud's Vfio interface as its clients see it (xpuctl's vfio commands, the shim's VFIO
// resource): the Kunlunxin functions on vfio-pci, and root's Bind and Unbind. One-shot calls,
// each on a connection of its own; apart from XpudClient so that the cards' client stays as it is.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/xpud_types.h"

namespace sdbus {
class IConnection;
}

namespace xpu {

// Vfio.Devices on `connection`; throws sdbus::Error as the call does (the watcher tells a
// missing interface, an older xpud's, from a failed connection).
Result<std::vector<VfioFunctionInfo>> fetch_vfio_functions(sdbus::IConnection& connection,
                                                           std::chrono::milliseconds timeout);

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
