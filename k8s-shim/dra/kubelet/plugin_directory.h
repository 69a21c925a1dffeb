// The driver's directory under /var/lib/kubelet/plugins: its DRA socket and its checkpoint.
#pragma once

#include <filesystem>

#include "common/result.h"

namespace shim::dra {

inline constexpr const char* kDefaultPluginDirectory = "/var/lib/kubelet/plugins/xpu.kunlunxin.com";
inline constexpr const char* kDefaultRegistryDirectory = "/var/lib/kubelet/plugins_registry";
inline constexpr const char* kDefaultCdiDirectory = "/var/run/cdi";

// Creates `directory` (and missing parents) with mode 0750 when it is missing: the checkpoint
// names every claim on the node and is nobody else's to read. An existing directory is left as
// its owner set it.
xpu::Status ensure_plugin_directory(const std::filesystem::path& directory);

}  // namespace shim::dra
