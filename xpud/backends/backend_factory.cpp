#include "xpud/backends/backend_factory.h"

#include "xpud/backends/auto_backend.h"
#include "xpud/backends/sim/sim_backend.h"
#include "xpud/backends/sysfs/sysfs_backend.h"
#include "xpud/backends/xpuml/xpuml_backend.h"

namespace xpud {

namespace {

xpu::Result<StartedBackend> without_simulator(xpu::Result<std::unique_ptr<Backend>> made) {
  if (!made) return xpu::Error{made.error()};
  return StartedBackend{std::move(*made), nullptr};
}

}  // namespace

xpu::Result<StartedBackend> make_backend(const Config& config) {
  if (config.backend == "sim") {
    auto sim = make_sim_backend(SimOptions{config.sim_devices, config.sim_model, config.sim_memory_mib});
    return StartedBackend{std::move(sim.backend), std::move(sim.simulator)};
  }
  if (config.backend == "sysfs") return without_simulator(make_sysfs_backend(config.sysfs_root));
  if (config.backend == "xpuml")
    return without_simulator(make_xpuml_backend(config.xpuml_library, config.sysfs_root));
  return without_simulator(make_auto_backend(config));
}

}  // namespace xpud
