// Which of xpud's devices the DRA driver publishes, prepares and reports health for: whole
// physical cards. Not a virtual function (the device plugin offers those under --enable-sriov),
// nor a physical function whose SR-IOV virtual functions are on: it has no compute of its own
// (the vendor's device plugin skips it as a "PF node"). xpud still lists both, and the exporter
// still reports them.
#pragma once

#include "common/xpud_client.h"

namespace shim::dra {

inline bool is_offered_card(const xpu::DeviceInfo& device) {
  return !device.is_virtual_function && !device.sriov_enabled;
}

// In a pool with counter sets (memory shares on, share_policy.h) virtual functions are offered
// too, each consuming its part of its PF's counter set, so that no claim gets a PF and its
// VFs together: a device that may be prepared is then anything but a PF with SR-IOV on.
inline bool is_preparable(const xpu::DeviceInfo& device, bool virtual_functions_offered) {
  return is_offered_card(device) || (virtual_functions_offered && device.is_virtual_function);
}

}  // namespace shim::dra
