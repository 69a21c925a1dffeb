// The exporter's program, libexec/xpu-k8s-shim/exporter, which `xpu-k8s-shim exporter` runs
// (k8s-shim/role_program.h).
#include <chrono>

#include "k8s-shim/cards/card_feed.h"
#include "k8s-shim/exporter/exporter_options.h"
#include "k8s-shim/role_program.h"
#include "k8s-shim/roles.h"

int main(int argc, char** argv) {
  return shim::run_role_program(
      "exporter", argc, argv,
      [](shim::ShimOptions& options, std::span<const std::string> args, xpu::StopSignals& stop) {
        const auto flags = shim::exporter::parse_exporter_command_line(options, args);
        // The feed is made after the flags (its grace period); its watcher starts when the
        // role is ready for the first view.
        shim::CardFeed cards({options.bus_address, shim::exporter::kXpudCallTimeout},
                             flags.xpud_grace_period, std::chrono::steady_clock::now());
        return shim::run_exporter(options, flags, cards, stop);
      });
}
