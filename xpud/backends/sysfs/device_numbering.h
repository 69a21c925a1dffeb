// Which /dev/xpuN belongs to which PCI function. The spec does not say how the kunlun driver
// numbers its nodes, so (see README.md):
//  1. A function under which the driver published class devices named xpuN backs exactly
//     those nodes (the kernel's own record; exact for one- and two-chip boards and after
//     hot-plug).
//  2. Every other function gets the lowest numbers nobody claimed, physical functions first in
//     bus-id order, then virtual functions in bus-id order: the driver probes PFs at load time
//     in bus order, and VFs only exist once SR-IOV is enabled on their PF, so they come later.
//     A K200 board (PCI subsystem 0/0) backs two consecutive nodes, one per chip.
#pragma once

#include <cstddef>
#include <vector>

#include "xpud/backends/sysfs/pci_function_scan.h"

namespace xpud::sysfs {

// One /dev/xpuN: the N, the function that backs it and which of its chips it is.
struct DeviceSlot {
  unsigned index = 0;
  std::size_t function = 0;  // position in the vector given to assign_device_slots
  unsigned chip = 0;         // 0, or 1 for the second chip of a K200
};

// Nodes a function backs when the driver publishes none.
unsigned chips_without_published_nodes(const PciFunction& function);

// Slots for every function, ordered by index. An xpuN published under two functions (only a
// broken tree does that) goes to the first in bus-id order; the other is numbered as in rule 2.
std::vector<DeviceSlot> assign_device_slots(const std::vector<PciFunction>& functions);

}  // namespace xpud::sysfs
