// xpu-k8s-shim: the command the chart and operators run, `xpu-k8s-shim [OPTIONS] ROLE [ROLE
// OPTIONS]`, for four roles (device-plugin, exporter, token-sync, dra-driver) that bridge xpud on
// D-Bus to the kubelet, Prometheus, the XPU runtime and the API server, and a fifth (validate)
// that the chart's test pod runs on the cards it was given.
//
// Each role is a program of its own (k8s-shim/role_program.h says why). This one reads the
// command line only as far as the role, then replaces itself with that role's program: same
// process (a container's PID 1 stays PID 1), same arguments.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/command_line.h"
#include "common/stop_signals.h"
#include "k8s-shim/shim_command_line.h"

namespace {

// The role programs are found from where this program is, not from a path fixed at build time:
// XPU_SHIM_ROLE_DIR is the install's libexec/xpu-k8s-shim relative to its bindir (CMake computes
// it), and the build tree lays the programs out the same way beside build/k8s-shim, so the
// build tree, the packages, the image and a relocated install all work without an override.
std::filesystem::path role_program(const std::string& role) {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw std::runtime_error("cannot read /proc/self/exe: " + error.message());
  return (self.parent_path() / XPU_SHIM_ROLE_DIR / role).lexically_normal();
}

int run(const std::vector<std::string>& args, char** argv) {
  // First thing, as every role program does: in a container this is PID 1, which drops a SIGTERM
  // while the default action stands. Blocked here, one that comes before the role program has
  // its own stop signals stays pending through execve and reaches the role.
  const xpu::StopSignals stop;
  shim::ShimOptions options;
  const auto rest = shim::parse_shim_command_line(options, args);
  const auto program = role_program(rest.front());
  ::execv(program.c_str(), argv);
  throw std::runtime_error("cannot run the " + rest.front() + " program " + program.string() +
                           ": " + std::strerror(errno));
}

}  // namespace

int main(int argc, char** argv) {
  return xpu::run_main(shim::kProgram, argc, argv,
                       [argv](const std::vector<std::string>& args) { return run(args, argv); });
}
