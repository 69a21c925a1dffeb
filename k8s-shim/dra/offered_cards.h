// Which of xpud's devices the DRA driver publishes, prepares and reports health for: physical
// cards and SR-IOV virtual functions, never a physical function whose virtual functions are on
// (the rule the device plugin applies too: k8s-shim/cards/sriov_physical_function.h).
#pragma once

#include "common/xpud_types.h"
#include "k8s-shim/cards/sriov_physical_function.h"

namespace shim::dra {

// A whole physical card: published as xpu-<index> (and with memory shares on, shared too).
inline bool is_offered_card(const xpu::DeviceInfo& device) {
  return !device.is_virtual_function && !is_sriov_physical_function(device);
}

// What may be prepared and reported on: a card or a VF (slice_content.h publishes the VFs whose
// PF xpud names, each consuming its part of its PF's counter set).
inline bool is_preparable(const xpu::DeviceInfo& device) {
  return is_offered_card(device) || device.is_virtual_function;
}

}  // namespace shim::dra
