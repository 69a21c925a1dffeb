// --node-status, which the roles that hand out cards (device-plugin, dra-driver) take alike.
#pragma once

#include <string_view>

#include "common/command_line.h"

namespace shim::node_status {

// The field managers the two roles apply as: each its own, so that a label both applied is kept
// until both have let it go (node_api.h).
inline constexpr std::string_view kDevicePluginFieldManager = "xpu-k8s-shim-device-plugin";
inline constexpr std::string_view kDraDriverFieldManager = "xpu-k8s-shim-dra-driver";

void add_node_status_flag(xpu::CommandLine& cli, bool& enabled);

}  // namespace shim::node_status
