// Which of xpud's devices the DRA driver publishes, prepares and reports health for: physical
// cards and SR-IOV virtual functions, never a physical function whose virtual functions are on
// (the rule the device plugin applies too: k8s-shim/cards/sriov_physical_function.h); and,
// apart from them, the functions on vfio-pci (for virtual machines), never as cards.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "common/names.h"
#include "common/pci_address.h"
#include "common/xpud_types.h"
#include "k8s-shim/cards/sriov_physical_function.h"
#include "k8s-shim/dra/dra_names.h"

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

// A function on vfio-pci that can be published: an extended BDF (its device name and its name in
// xpud's VFIO CDI spec are made from it) in a numbered IOMMU group (/dev/vfio/<group>).
inline bool is_offered_vfio_function(const xpu::VfioFunctionInfo& function) {
  return xpu::pci_address::is_extended_bdf(function.pci_bus_id) &&
         xpu::names::vfio::is_iommu_group(function.iommu_group);
}

// The offered function `device` (a vfio_device_name()) names; nullptr for none.
inline const xpu::VfioFunctionInfo* find_vfio_function(
    const std::vector<xpu::VfioFunctionInfo>& functions, std::string_view device) {
  auto it = std::find_if(functions.begin(), functions.end(), [&](const auto& function) {
    return is_offered_vfio_function(function) && vfio_device_name(function.pci_bus_id) == device;
  });
  return it == functions.end() ? nullptr : &*it;
}

// Whether xpud lists `card` on vfio-pci too (a discovery not yet run after a bind): such a card
// is in no compute pool, the same rule as the device plugin's.
inline bool is_on_vfio(const xpu::DeviceInfo& card,
                       const std::vector<xpu::VfioFunctionInfo>& functions) {
  return !card.pci_bus_id.empty() &&
         std::any_of(functions.begin(), functions.end(),
                     [&](const auto& function) { return function.pci_bus_id == card.pci_bus_id; });
}

}  // namespace shim::dra
