// The library-free backend: finds cards by scanning <root>/sys/bus/pci/devices for vendor
// 0x1d22, maps them to /dev/xpuN (device_numbering.h) and reports driver faults from
// <root>/proc/xpu/probe_error. It has no metrics. See README.md in this directory.
#pragma once

#include <filesystem>
#include <memory>

#include "common/result.h"
#include "xpud/backends/backend.h"

namespace xpud {

// Fails when <root>/sys/bus/pci/devices is not a directory (sysfs not mounted, wrong root).
xpu::Result<std::unique_ptr<Backend>> make_sysfs_backend(const std::filesystem::path& root);

}  // namespace xpud
