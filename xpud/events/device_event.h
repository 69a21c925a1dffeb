// One kernel device event (uevent) as xpud sees it, whatever delivered it (udev's monitor, or
// the test hook), and the one decision made about it: does it concern an XPU.
#pragma once

#include <string>

namespace xpud {

struct DeviceEvent {
  std::string action;     // add, remove, bind, unbind, change, move, online, offline
  std::string subsystem;  // "pci", or the class of a device node
  std::string sysname;    // last component of the device path: "0000:3b:00.0", "xpu3"
  std::string pci_id;     // the kernel's PCI_ID property, "1D22:3684"; empty for other subsystems
};

// True for a PCI function of vendor 0x1d22 (its PCI_ID) and for the XPU device nodes, matched by
// name (xpu<N>, xpuctrl) because the class the driver registers them under is not documented.
bool concerns_xpu(const DeviceEvent& event);

// "add pci 0000:3b:00.0", for the logs.
std::string describe(const DeviceEvent& event);

}  // namespace xpud
