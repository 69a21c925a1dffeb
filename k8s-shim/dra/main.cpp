// The DRA driver's program, libexec/xpu-k8s-shim/dra-driver, which `xpu-k8s-shim dra-driver`
// runs (k8s-shim/role_program.h).
#include <chrono>

#include "k8s-shim/cards/card_feed.h"
#include "k8s-shim/dra/dra_driver_options.h"
#include "k8s-shim/role_program.h"
#include "k8s-shim/roles.h"

int main(int argc, char** argv) {
  return shim::run_role_program(
      "dra-driver", argc, argv,
      [](shim::ShimOptions& options, std::span<const std::string> args, xpu::StopSignals& stop) {
        const auto driver = shim::dra::parse_dra_driver_command_line(options, args);
        // The feed is made after the flags (its grace period); its watcher starts when the
        // role is ready for the first view.
        shim::CardFeed cards({.bus_address = options.bus_address}, driver.xpud_grace_period,
                             std::chrono::steady_clock::now());
        return shim::run_dra_driver(driver, cards, stop);
      });
}
