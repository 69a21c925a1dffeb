#include "xpud/cdi/vfio_cdi_spec.h"

#include <nlohmann/json.hpp>

#include "common/names.h"

namespace xpud {

std::string render_vfio_cdi_spec(const std::vector<VfioCdiDevice>& devices) {
  using nlohmann::json;
  namespace vfio = xpu::names::vfio;
  const std::string env = vfio::pci_resource_env(vfio::kResourceName);
  json list = json::array();
  for (const auto& device : devices) {
    if (!vfio::is_iommu_group(device.iommu_group) ||
        !xpu::names::cdi::is_device_name(device.pci_bus_id))
      continue;
    list.push_back(
        {{"name", device.pci_bus_id},
         {"containerEdits",
          {{"env", json::array({env + "=" + device.pci_bus_id})},
           {"deviceNodes",
            json::array({{{"path", "/dev/vfio/" + device.iommu_group}, {"permissions", "rw"}},
                         {{"path", "/dev/vfio/vfio"}, {"permissions", "rw"}}})}}}});
  }
  if (list.empty()) return {};
  // 0.5.0: the first version whose names may start with a digit, as PCI addresses do.
  json spec = {
      {"cdiVersion", "0.5.0"}, {"kind", std::string(vfio::kCdiKind)}, {"devices", std::move(list)}};
  return spec.dump(2) + "\n";
}

}  // namespace xpud
