// The library-free backend: finds cards by scanning <root>/sys/bus/pci/devices for vendor
// 0x1d22, maps them to /dev/xpuN (device_numbering.h) and reports driver faults from
// <root>/proc/xpu/probe_error. It has no metrics. See README.md in this directory.
#pragma once

#include <filesystem>
#include <memory>

#include "common/result.h"
#include "xpud/backends/backend.h"
#include "xpud/backends/topology_quirks.h"

namespace xpud {

// Fails when <root>/sys/bus/pci/devices is not a directory (sysfs not mounted, wrong root).
// LinkedDevices come from `links` (topology_links.h); null: no table, no links.
xpu::Result<std::unique_ptr<Backend>> make_sysfs_backend(
    const std::filesystem::path& root, std::shared_ptr<const topology::LinkTable> links = nullptr);

}  // namespace xpud
