// Placeholder until the device-plugin role lands.
#include <spdlog/spdlog.h>

#include "k8s-shim/roles.h"

namespace shim {
int run_device_plugin(ShimOptions options, std::span<const std::string> args, xpu::StopSignals&) {
  xpu::CommandLine cli("xpu-k8s-shim device-plugin", "[OPTIONS]");
  parse_role_command_line(cli, options, args, "device-plugin");
  spdlog::error("the device-plugin role is not implemented yet");
  return 1;
}
}  // namespace shim
