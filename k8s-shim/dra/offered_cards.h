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

}  // namespace shim::dra
