#include "k8s-shim/role_program.h"

#include <vector>

#include "k8s-shim/shim_command_line.h"

namespace shim {

int run_role_program(std::string_view role, int argc, char** argv, const RoleBody& body) {
  return xpu::run_main(kProgram, argc, argv, [&](const std::vector<std::string>& args) {
    // First, before any thread exists (every thread inherits the blocked mask), and before the
    // role binds anything: in a container this is PID 1, whose SIGTERM is dropped, not queued,
    // while the default action stands, and a pod deleted as it starts would then keep its
    // socket. The dispatcher blocked them before its exec too (the mask and a signal pending
    // under it survive execve), so no moment of the start is left uncovered.
    xpu::StopSignals stop;
    ShimOptions options;
    const auto rest = parse_shim_command_line(options, args);
    if (rest.front() != role)
      xpu::exit_usage_error(kProgram, "this is the program of role '" + std::string(role) +
                                          "', given role '" + rest.front() +
                                          "': run it as xpu-k8s-shim [OPTIONS] " +
                                          std::string(role) + " [ROLE OPTIONS]");
    return body(options, std::span<const std::string>(rest).subspan(1), stop);
  });
}

}  // namespace shim
