// The library-free backend: finds cards by scanning <root>/sys/bus/pci/devices for vendor 0x1d22.
#pragma once

#include <filesystem>
#include <memory>

#include "common/result.h"
#include "xpud/backends/backend.h"

namespace xpud {

xpu::Result<std::unique_ptr<Backend>> make_sysfs_backend(const std::filesystem::path& root);

}  // namespace xpud
