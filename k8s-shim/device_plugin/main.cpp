// The device plugin's program, libexec/xpu-k8s-shim/device-plugin, which `xpu-k8s-shim
// device-plugin` runs (k8s-shim/role_program.h).
#include <chrono>

#include "k8s-shim/cards/card_feed.h"
#include "k8s-shim/device_plugin/device_plugin_options.h"
#include "k8s-shim/role_program.h"
#include "k8s-shim/roles.h"

int main(int argc, char** argv) {
  return shim::run_role_program(
      "device-plugin", argc, argv,
      [](shim::ShimOptions& options, std::span<const std::string> args, xpu::StopSignals& stop) {
        const auto plugin = shim::parse_device_plugin_command_line(options, args);
        // The feed is made after the flags (its grace period); its watcher starts when the
        // role is ready for the first view.
        shim::CardFeed cards({.bus_address = options.bus_address}, plugin.xpud_grace_period,
                             std::chrono::steady_clock::now());
        return shim::run_device_plugin(options, plugin, cards, stop);
      });
}
