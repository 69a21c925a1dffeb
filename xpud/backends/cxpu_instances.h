// cXPU instances: a named share of one card whose global memory the driver bounds, what the
// vendor's container runtime makes for each container that sets CXPU_CONTAINER_MEMORY_LIMIT
// (docs/hardware.md, "cXPU instances"). A backend that can make them returns this interface from
// Backend::cxpu_instances(); the sysfs backend cannot (it has no library).
//
// Threading: like every driver call, only from the sampler's driver thread (see backend.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "xpud/backends/driver_change.h"
#include "xpud/device.h"

namespace xpud {

class CxpuInstanceControl {
 public:
  virtual ~CxpuInstanceControl() = default;
  // Creates instance `id` on `device` (found by the last discover()) and bounds its global
  // memory to `memory_limit_bytes`. When the limit cannot be set, the instance is destroyed
  // again: an instance without its bound is never left behind. The caller has checked `id`
  // (valid_cxpu_instance_id) and the limit against the card's memory.
  virtual std::optional<DriverChangeError> create_instance(const DeviceIdentity& device,
                                                           const std::string& id,
                                                           std::uint64_t memory_limit_bytes) = 0;
  // Sets the limit of an instance that exists.
  virtual std::optional<DriverChangeError> set_instance_memory_limit(
      const DeviceIdentity& device, const std::string& id, std::uint64_t memory_limit_bytes) = 0;
  virtual std::optional<DriverChangeError> destroy_instance(const DeviceIdentity& device,
                                                            const std::string& id) = 0;
};

}  // namespace xpud
