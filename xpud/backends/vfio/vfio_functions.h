// The Kunlunxin PCI functions bound to vfio-pci (for virtual machines), as sysfs shows them:
// what xpud publishes on the Vfio interface, what the CDI spec and the cluster's VFIO resource
// hand out. Such a function has no /dev/xpuN, so no backend serves it as a card.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/result.h"

namespace xpud::vfio {

inline constexpr std::string_view kVfioDriver = "vfio-pci";
// The container (the IOMMU context) every VFIO user opens beside its groups (vfio.rst).
inline constexpr std::string_view kVfioContainerNode = "/dev/vfio/vfio";

struct VfioFunction {
  std::string pci_bus_id;   // "0000:3b:00.0"
  std::string pci_id;       // "1d22:3684": vendor:device, as KubeVirt's pciVendorSelector
  std::string iommu_group;  // "12": the name of the iommu_group link's target
  std::string model;        // as the sysfs backend names it ("R200", "KL2-VF")
  bool is_virtual_function = false;
  std::string physical_function;  // a VF's PF by bus id; empty for a PF
  int numa_node = -1;

  bool operator==(const VfioFunction&) const = default;
};

// /dev/vfio/<group>: the node a VM's user opens for the function.
std::string group_node(const VfioFunction& function);

// The Kunlunxin functions under root/sys/bus/pci/devices bound to vfio-pci, ordered by bus id.
// A function without an iommu_group link (vfio-pci cannot have bound it on a kernel with an
// IOMMU; only no-IOMMU mode does) is left out with a warning naming it. Fails only when the
// devices directory cannot be listed.
xpu::Result<std::vector<VfioFunction>> scan_vfio_functions(const std::filesystem::path& root);

// The group's number from a function's iommu_group link ("../../../kernel/iommu_groups/12" ->
// "12"); empty without the link or when its target is not a decimal group number.
std::string read_iommu_group(const std::filesystem::path& function_dir);

}  // namespace xpud::vfio
