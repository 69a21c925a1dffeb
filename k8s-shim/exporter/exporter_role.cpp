// Placeholder until the exporter role lands.
#include <spdlog/spdlog.h>

#include "k8s-shim/roles.h"

namespace shim {
int run_exporter(ShimOptions options, std::span<const std::string> args, xpu::StopSignals&) {
  xpu::CommandLine cli("xpu-k8s-shim exporter", "[OPTIONS]");
  parse_role_command_line(cli, options, args, "exporter");
  spdlog::error("the exporter role is not implemented yet");
  return 1;
}
}  // namespace shim
