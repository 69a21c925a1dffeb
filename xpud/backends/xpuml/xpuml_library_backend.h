// The xpuml backend over the first usable library of [xpuml] library's list
// (xpuml::Library::open_first), and that backend saying which file it runs on
// (Backend::library_path, the Manager's LibraryPath).
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include "common/result.h"
#include "xpud/backends/backend.h"
#include "xpud/backends/topology_quirks.h"

namespace xpud {

// As make_xpuml_backend (xpuml_backend.h), over the first of `libraries` that loads and has the
// required symbols. `init_failed` (when given) is set when that library loaded but xpumlInit
// failed; when none loads, the error names every candidate and why.
xpu::Result<std::unique_ptr<Backend>> open_xpuml_backend(
    const std::vector<std::filesystem::path>& libraries, const std::filesystem::path& sysfs_root,
    bool* init_failed = nullptr, std::shared_ptr<const topology::LinkTable> links = nullptr);

}  // namespace xpud
