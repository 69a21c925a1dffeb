// The plugin's side of the kubelet's Registration service: one Register call.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include "common/result.h"

namespace shim {

// Registers `resource_name` served on `endpoint` (a socket file name in the kubelet's plugin
// directory) with the kubelet listening on `kubelet_socket`. Fails fast when nobody listens.
// When `cancel_fd` (if not -1) turns readable, a stop signal, the call is cancelled instead of
// holding the stop for up to `timeout`; the result is then an error.
xpu::Status register_with_kubelet(const std::filesystem::path& kubelet_socket,
                                  const std::string& resource_name, const std::string& endpoint,
                                  std::chrono::milliseconds timeout, int cancel_fd = -1);

}  // namespace shim
