// xpu-k8s-shim: one binary, four roles (device-plugin, exporter, token-sync, dra-driver),
// bridging xpud on D-Bus to the kubelet, Prometheus, the XPU runtime and the API server, and a
// fifth (validate) that the chart's test pod runs on the cards it was given.
#include <chrono>
#include <string>
#include <vector>

#include "common/command_line.h"
#include "common/stop_signals.h"
#include "k8s-shim/cards/card_feed.h"
#include "k8s-shim/device_plugin/device_plugin_options.h"
#include "k8s-shim/dra/dra_driver_options.h"
#include "k8s-shim/exporter/exporter_options.h"
#include "k8s-shim/roles.h"

namespace {

constexpr const char* kProgram = "xpu-k8s-shim";

int run(const std::vector<std::string>& args) {
  // First, before any thread exists (every thread inherits the blocked mask), and before the
  // role binds anything: in a container this is PID 1, whose SIGTERM is dropped, not queued,
  // while the default action stands, and a pod deleted as it starts would then keep its socket.
  xpu::StopSignals stop;
  shim::ShimOptions options;
  xpu::HelpAndVersion flags;
  xpu::CommandLine cli(
      kProgram, "[OPTIONS] device-plugin|exporter|token-sync|dra-driver|validate [ROLE OPTIONS]");
  xpu::add_help_flag(cli, flags);
  xpu::add_version_flag(cli, flags);
  shim::add_common_options(cli, options);
  const auto rest = xpu::parse_program_command_line(
      cli, args, flags, xpu::Positionals::kStopAtFirst,
      "\nRoles (each takes --help):\n"
      "  device-plugin   kubelet device plugin for kunlunxin.com/xpu\n"
      "  exporter        Prometheus exporter on :9507\n"
      "  token-sync      copies the service-account token to /xpu-runtime/auth\n"
      "  dra-driver      Dynamic Resource Allocation driver xpu.kunlunxin.com\n"
      "  validate        checks the cards this container was given, then exits\n");
  if (rest.empty())
    xpu::exit_usage_error(
        kProgram, "missing role: device-plugin, exporter, token-sync, dra-driver or validate");
  const std::string& role = rest.front();
  std::span<const std::string> role_args(rest.begin() + 1, rest.end());
  // A role that reads cards gets them from one feed, made here after its flags (the grace
  // period); its watcher starts when the role is ready for the first view.
  if (role == "device-plugin") {
    const auto plugin = shim::parse_device_plugin_command_line(options, role_args);
    shim::CardFeed cards({.bus_address = options.bus_address}, plugin.xpud_grace_period,
                         std::chrono::steady_clock::now());
    return shim::run_device_plugin(options, plugin, cards, stop);
  }
  if (role == "exporter") {
    const auto flags = shim::exporter::parse_exporter_command_line(options, role_args);
    shim::CardFeed cards({options.bus_address, shim::exporter::kXpudCallTimeout},
                         flags.xpud_grace_period, std::chrono::steady_clock::now());
    return shim::run_exporter(options, flags, cards, stop);
  }
  if (role == "token-sync") return shim::run_token_sync(options, role_args, stop);
  if (role == "dra-driver") {
    const auto driver = shim::dra::parse_dra_driver_command_line(options, role_args);
    shim::CardFeed cards({.bus_address = options.bus_address}, driver.xpud_grace_period,
                         std::chrono::steady_clock::now());
    return shim::run_dra_driver(driver, cards, stop);
  }
  if (role == "validate") return shim::run_validate(options, role_args, stop);
  xpu::exit_usage_error(kProgram, "unknown role '" + role + "'");
}

}  // namespace

int main(int argc, char** argv) {
  return xpu::run_main(kProgram, argc, argv, run);
}
