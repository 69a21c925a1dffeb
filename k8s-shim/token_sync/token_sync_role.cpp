// Placeholder until the token-sync role lands.
#include <spdlog/spdlog.h>

#include "k8s-shim/roles.h"

namespace shim {
int run_token_sync(ShimOptions options, std::span<const std::string> args, xpu::StopSignals&) {
  xpu::CommandLine cli("xpu-k8s-shim token-sync", "[OPTIONS]");
  parse_role_command_line(cli, options, args, "token-sync");
  spdlog::error("the token-sync role is not implemented yet");
  return 1;
}
}  // namespace shim
