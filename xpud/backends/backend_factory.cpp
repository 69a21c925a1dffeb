#include "xpud/backends/backend_factory.h"

#include <spdlog/spdlog.h>

#include "xpud/backends/auto_backend.h"
#include "xpud/backends/pci_function_reset.h"
#include "xpud/backends/sim/sim_backend.h"
#include "xpud/backends/sysfs/sysfs_backend.h"
#include "xpud/backends/topology_quirks.h"
#include "xpud/backends/xpuml/xpuml_backend.h"

namespace xpud {
namespace {

// The hardware backends' link table. A missing or bad file must not keep xpud from serving
// cards: it costs the links only, and the warning says where the file went wrong.
std::shared_ptr<const topology::LinkTable> load_topology(const Config& config) {
  auto table = topology::load_link_table(config.topology_quirks);
  if (!table) {
    spdlog::warn("topology: {}; no card gets LinkedDevices ([topology] quirks)", table.error());
    return nullptr;
  }
  spdlog::debug("topology: {} board entries from {}", table->boards.size(), table->source);
  return std::make_shared<const topology::LinkTable>(std::move(*table));
}

xpu::Result<StartedBackend> hardware(xpu::Result<std::unique_ptr<Backend>> made,
                                     const Config& config) {
  if (!made) return xpu::Error{made.error()};
  return StartedBackend{
      std::move(*made), nullptr, {}, std::make_shared<PciFunctionReset>(config.sysfs_root)};
}

}  // namespace

xpu::Result<StartedBackend> make_backend(const Config& config) {
  if (config.backend == "sim") {
    auto sim =
        make_sim_backend(SimOptions{config.sim_devices, config.sim_model, config.sim_memory_mib});
    return StartedBackend{std::move(sim.backend), std::move(sim.simulator),
                          std::string(kSimDeviceNodeStandIn), std::move(sim.card_reset)};
  }
  auto links = load_topology(config);
  if (config.backend == "sysfs")
    return hardware(make_sysfs_backend(config.sysfs_root, links), config);
  if (config.backend == "xpuml")
    return hardware(open_xpuml_backend(config.xpuml_libraries, config.sysfs_root, nullptr, links),
                    config);
  return hardware(make_auto_backend(config, {}, links), config);
}

}  // namespace xpud
