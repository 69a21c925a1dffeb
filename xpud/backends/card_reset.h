// Resetting one card: the kernel's reset of its PCI function for the hardware backends
// (pci_function_reset.h), the simulated card's for the sim backend. Apart from the read-only
// Backend interface, as the other changes are (virtual_functions.h, cxpu_instances.h).
//
// Threading: reset_card() runs on the sampler's driver thread, time-boxed like every driver call.
#pragma once

#include <optional>

#include "xpud/backends/driver_change.h"
#include "xpud/device.h"

namespace xpud {

class CardResetControl {
 public:
  virtual ~CardResetControl() = default;
  // Resets `device` and returns once the reset is done (the card may still need moments before
  // the driver reads it as usable: the caller checks it afterwards). nullopt when it was reset.
  virtual std::optional<DriverChangeError> reset_card(const DeviceIdentity& device) = 0;
};

}  // namespace xpud
