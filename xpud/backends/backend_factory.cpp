#include "xpud/backends/backend_factory.h"

#include <spdlog/spdlog.h>

#include "xpud/backends/sim/sim_backend.h"
#include "xpud/backends/sysfs/sysfs_backend.h"
#include "xpud/backends/xpuml/xpuml_backend.h"

namespace xpud {

xpu::Result<std::unique_ptr<Backend>> make_backend(const Config& config) {
  if (config.backend == "sim")
    return make_sim_backend(SimOptions{config.sim_devices, config.sim_model, config.sim_memory_mib});
  if (config.backend == "sysfs") return make_sysfs_backend(config.sysfs_root);
  if (config.backend == "xpuml") return make_xpuml_backend(config.xpuml_library, config.sysfs_root);

  auto xpuml = make_xpuml_backend(config.xpuml_library, config.sysfs_root);
  if (xpuml) return xpuml;
  spdlog::info("backend auto: xpuml unavailable ({}), using sysfs", xpuml.error());
  auto sysfs = make_sysfs_backend(config.sysfs_root);
  if (sysfs) return sysfs;
  return xpu::Error{"no backend available: xpuml: " + xpuml.error() + "; sysfs: " + sysfs.error()};
}

}  // namespace xpud
