// The NUMA node of a PCI device, from <sysfs_root>/sys/bus/pci/devices/<bus id>/numa_node.
#pragma once

#include <filesystem>
#include <string>

#include "common/result.h"

namespace xpud::xpuml {

// Highest node number Linux can have (CONFIG_NODES_SHIFT is at most 10).
inline constexpr int kMaxNumaNode = 1023;

// The node, or -1 when the file is absent or says -1 (no affinity). An error naming the file and
// the problem when it cannot be read or holds anything but one integer in -1..1023.
// `bus_id` must already be normalised ("0000:3b:00.0"), so it cannot escape the directory.
xpu::Result<int> read_numa_node(const std::filesystem::path& sysfs_root, const std::string& bus_id);

}  // namespace xpud::xpuml
