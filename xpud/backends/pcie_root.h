// The PCIe root complex a card sits under ("pci0000:00"), for Device.PcieRoot and through it the
// Kubernetes standard attribute resource.kubernetes.io/pcieRoot. Read as resolvePCIeRoot
// (k8s.io/dynamic-resource-allocation v0.37.2, deviceattribute/pci_linux.go) reads it: the link
// sys/bus/pci/devices/<bus id> leads to the function's directory under sys/devices, whose first
// component is the root bus ("../../../devices/pci0000:00/0000:00:01.0/0000:3b:00.0"). The link
// comes from outside the daemon: anything but that shape gives no root.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace xpud::sysfs {

// The root named by `target`, the text of the link sys/bus/pci/devices/<bus_id>, taken (as the
// kernel writes it) relative to that directory: when it resolves, without leaving sysfs, to
// devices/<root>/.../<bus_id> with <root> of the kernel's form "pciDDDD:BB" (pci_address.h).
// nullopt otherwise: an absolute target (as resolvePCIeRoot), one leading anywhere else, one
// ending in another name, or a bus_id that is not an extended BDF.
std::optional<std::string> pcie_root_from_link(std::string_view bus_id, std::string_view target);

// The root of the function whose bus entry is `entry` (<sysfs root>/sys/bus/pci/devices/<bus_id>).
// Empty when it cannot be told: no entry (debug line only when something else is there), an entry
// that is not a link (a tree of plain directories), or a link pcie_root_from_link refuses (both
// with a debug line naming the entry).
std::string read_pcie_root(const std::filesystem::path& entry, std::string_view bus_id);

}  // namespace xpud::sysfs
