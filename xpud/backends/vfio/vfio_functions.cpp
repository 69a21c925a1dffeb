#include "xpud/backends/vfio/vfio_functions.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

#include "xpud/backends/pci_ids.h"
#include "xpud/backends/sysfs/pci_function_scan.h"
#include "xpud/backends/sysfs_attribute.h"

namespace xpud::vfio {

std::string group_node(const VfioFunction& function) {
  return "/dev/vfio/" + function.iommu_group;
}

std::string read_iommu_group(const std::filesystem::path& function_dir) {
  auto name = sysfs::symlink_target_name(function_dir / "iommu_group");
  if (!name || name->empty() || name->size() > 10 ||
      !std::all_of(name->begin(), name->end(), [](char c) { return c >= '0' && c <= '9'; }))
    return {};
  return *name;
}

xpu::Result<std::vector<VfioFunction>> scan_vfio_functions(const std::filesystem::path& root) {
  auto scanned = sysfs::scan_kunlunxin_functions(root / "sys/bus/pci/devices");
  if (!scanned.ok()) return xpu::Error{scanned.error()};
  std::vector<VfioFunction> functions;
  for (const auto& function : *scanned) {
    if (function.driver != kVfioDriver) continue;
    VfioFunction vfio;
    vfio.pci_bus_id = function.pci_bus_id;
    char pci_id[10];
    std::snprintf(pci_id, sizeof pci_id, "%04x:%04x", pci::kVendorKunlunxin, function.device_id);
    vfio.pci_id = pci_id;
    vfio.iommu_group = read_iommu_group(function.dir);
    if (vfio.iommu_group.empty()) {
      spdlog::warn("vfio: {} is bound to {} but has no IOMMU group (iommu_group link): not offered",
                   function.pci_bus_id, kVfioDriver);
      continue;
    }
    vfio.model = function.model.model;
    vfio.is_virtual_function = function.is_virtual_function();
    vfio.physical_function = function.physfn_bus_id;
    vfio.numa_node = function.numa_node;
    functions.push_back(std::move(vfio));
  }
  return functions;  // scan_kunlunxin_functions orders by bus id
}

}  // namespace xpud::vfio
