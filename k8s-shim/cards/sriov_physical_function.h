// The one rule both ways of offering cards share (the device plugin's resource plan and the DRA
// driver's slice, prepare and health): a physical function whose SR-IOV virtual functions are on
// is offered to no pod. It has no compute of its own, its virtual functions have it (the vendor's
// device plugin skips it as a "PF node" too). xpud still lists it, and the exporter still reports
// it.
#pragma once

#include "common/xpud_types.h"

namespace shim {

// xpud sets SriovEnabled only on physical functions; a device that claims it is left out whatever
// else it says, so that no role offers a card another one leaves out.
inline bool is_sriov_physical_function(const xpu::DeviceInfo& device) {
  return device.sriov_enabled;
}

}  // namespace shim
