// Changing the number of SR-IOV virtual functions, kept apart from the read-only Backend
// interface. A backend that can do it (xpuml, sysfs, and sim, which simulates them) returns
// itself from Backend::virtual_functions().
//
// Threading: like every driver call, only from the sampler's driver thread (see backend.h).
#pragma once

#include <optional>

#include "xpud/backends/driver_change.h"
#include "xpud/device.h"

namespace xpud {

class VirtualFunctionControl {
 public:
  virtual ~VirtualFunctionControl() = default;
  // Makes `device` (a physical function found by the last discover()) have `count` virtual
  // functions; nothing to do when it already has. The new functions show up in a later
  // discover(), as hot-plugged cards do.
  virtual std::optional<DriverChangeError> set_virtual_function_count(const DeviceIdentity& device,
                                                                      unsigned count) = 0;
};

}  // namespace xpud
