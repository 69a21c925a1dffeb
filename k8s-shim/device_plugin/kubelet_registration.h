// The plugin's side of the kubelet's Registration service: one Register call.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include "common/result.h"

namespace shim {

// Registers `resource_name` served on `endpoint` (a socket file name in the kubelet's plugin
// directory) with the kubelet listening on `kubelet_socket`. Fails fast when nobody listens.
xpu::Status register_with_kubelet(const std::filesystem::path& kubelet_socket,
                                  const std::string& resource_name, const std::string& endpoint,
                                  std::chrono::milliseconds timeout);

}  // namespace shim
