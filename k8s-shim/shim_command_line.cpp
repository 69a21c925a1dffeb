#include "k8s-shim/shim_command_line.h"

#include <algorithm>
#include <array>

namespace shim {

namespace {

struct Role {
  std::string_view name;
  std::string_view summary;
};

constexpr std::array kRoles{
    Role{"device-plugin", "kubelet device plugin for kunlunxin.com/xpu"},
    Role{"exporter", "Prometheus exporter on :9507"},
    Role{"token-sync", "copies the service-account token to /xpu-runtime/auth"},
    Role{"dra-driver", "Dynamic Resource Allocation driver xpu.kunlunxin.com"},
    Role{"validate", "checks the cards this container was given, then exits"},
};

std::string roles_help() {
  std::string text = "\nRoles (each takes --help):\n";
  for (const auto& role : kRoles) {
    std::string line = "  " + std::string(role.name);
    line.resize(18, ' ');
    text += line + std::string(role.summary) + "\n";
  }
  return text;
}

}  // namespace

bool is_role(std::string_view name) {
  return std::ranges::any_of(kRoles, [name](const Role& role) { return role.name == name; });
}

std::vector<std::string> parse_shim_command_line(ShimOptions& options,
                                                 std::span<const std::string> args) {
  xpu::HelpAndVersion flags;
  xpu::CommandLine cli(
      kProgram, "[OPTIONS] device-plugin|exporter|token-sync|dra-driver|validate [ROLE OPTIONS]");
  xpu::add_help_flag(cli, flags);
  xpu::add_version_flag(cli, flags);
  add_common_options(cli, options);
  auto rest = xpu::parse_program_command_line(cli, args, flags, xpu::Positionals::kStopAtFirst,
                                              roles_help());
  if (rest.empty())
    xpu::exit_usage_error(
        kProgram, "missing role: device-plugin, exporter, token-sync, dra-driver or validate");
  if (!is_role(rest.front()))
    xpu::exit_usage_error(kProgram, "unknown role '" + rest.front() + "'");
  return rest;
}

}  // namespace shim
