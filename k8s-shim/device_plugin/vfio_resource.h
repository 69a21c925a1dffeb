// The device plugin's resource for Kunlunxin functions on vfio-pci (cards and SR-IOV virtual
// functions given to virtual machines): `<domain>/xpu_vfio` (kunlunxin.com/xpu_vfio) on
// `kunlunxin-xpu-vfio.sock`, the resource KubeVirt's permittedHostDevices names with
// externalResourceProvider: true. Pure, like the rest of the plan.
//
// Devices: one per function xpud's Vfio interface lists, ID = its PCI address; healthy (vfio-pci
// holds it whatever xpud does; while xpud is away the list is the last it gave). A card is offered
// in one pool only: a function on vfio-pci that xpud still lists as a card (a discovery not yet
// run) is left out of the compute resources (exclude_vfio_cards) and offered here. Allocate gives
// each function's /dev/vfio/<group> and /dev/vfio/vfio ("mrw", as KubeVirt's own device plugin
// gives them) and PCI_RESOURCE_<resource upper-cased, '/' and '.' made '_'> = the addresses,
// comma-separated: where KubeVirt's virt-launcher finds them.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/xpud_types.h"
#include "k8s-shim/device_plugin/container_allocation.h"
#include "k8s-shim/device_plugin/resource_plan.h"

namespace shim {

inline constexpr std::string_view kVfioResource = "xpu_vfio";  // after "<domain>/"
inline constexpr std::string_view kVfioSocketName = "kunlunxin-xpu-vfio.sock";

// The PCI addresses xpud lists on vfio-pci.
std::set<std::string> vfio_bus_ids(const xpu::DeviceView& view);

// Fills `state` (the VFIO resource) from the view; functions that cannot be offered (an address
// or group xpud should never send) go to `problems`.
void plan_vfio_devices(const xpu::DeviceView& view, ResourceState& state,
                       std::vector<std::string>& problems);

// Allocate for the VFIO resource.
xpu::Result<ContainerAllocation> allocate_vfio_container(
    const ResourceState& state, const std::vector<std::string>& device_ids);

}  // namespace shim
