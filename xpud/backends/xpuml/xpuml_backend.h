// The production backend: the vendor management library libxpuml.so.1, loaded with dlopen.
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include "common/result.h"
#include "xpud/backends/backend.h"
#include "xpud/backends/topology_quirks.h"

namespace xpud {

// Loads and initialises the library. Fails with a message an operator can act on (missing file,
// missing required symbol, xpumlInit error). NUMA nodes are read from
// <sysfs_root>/sys/bus/pci/devices/<bus id>/numa_node. A card whose library gives no usable
// UUID gets the id the sysfs backend gives it (device_uuid.h). `init_failed` (when given) is set
// when the library loaded but xpumlInit failed. LinkedDevices come from `links`
// (topology_links.h); null: no table, no links.
xpu::Result<std::unique_ptr<Backend>> make_xpuml_backend(
    const std::filesystem::path& library, const std::filesystem::path& sysfs_root,
    bool* init_failed = nullptr, std::shared_ptr<const topology::LinkTable> links = nullptr);

// As above, over the first of `libraries` ([xpuml] library's candidates, in order) that loads and
// has the required symbols; its file is the backend's library_path(). `init_failed` concerns that
// library; when none loads, the error names every candidate and why.
xpu::Result<std::unique_ptr<Backend>> open_xpuml_backend(
    const std::vector<std::filesystem::path>& libraries, const std::filesystem::path& sysfs_root,
    bool* init_failed = nullptr, std::shared_ptr<const topology::LinkTable> links = nullptr);

namespace xpuml {
class Library;
}

// The same over a library already open (xpuml::Library::open, or from_symbols for a fuzzer).
std::unique_ptr<Backend> make_xpuml_backend(
    std::unique_ptr<xpuml::Library> library, const std::filesystem::path& sysfs_root,
    std::shared_ptr<const topology::LinkTable> links = nullptr);

}  // namespace xpud
