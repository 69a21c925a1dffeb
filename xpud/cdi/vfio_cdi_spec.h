// The CDI spec of the Kunlunxin functions on vfio-pci (default
// /var/run/cdi/kunlunxin-xpu-vfio.json), kind kunlunxin.com/xpu_vfio: one device per function,
// named by its PCI address ("kunlunxin.com/xpu_vfio=0000:3b:00.0"), giving a VM's launcher
// /dev/vfio/<group>, /dev/vfio/vfio and the address in PCI_RESOURCE_KUNLUNXIN_COM_XPU_VFIO,
// where KubeVirt's virt-launcher reads it. Pure: rendering only; the daemon keeps the file.
#pragma once

#include <string>
#include <vector>

namespace xpud {

struct VfioCdiDevice {
  std::string pci_bus_id;   // "0000:3b:00.0"
  std::string iommu_group;  // "12"
};

// The spec's text; empty when there is no function (the file is then removed). A function
// whose address or group cannot be a CDI name or a /dev path is left out.
std::string render_vfio_cdi_spec(const std::vector<VfioCdiDevice>& devices);

}  // namespace xpud
