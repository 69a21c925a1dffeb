#include "xpud/backends/backend_factory.h"

#include "xpud/backends/auto_backend.h"
#include "xpud/backends/sim/sim_backend.h"
#include "xpud/backends/sysfs/sysfs_backend.h"
#include "xpud/backends/xpuml/xpuml_backend.h"

namespace xpud {

xpu::Result<std::unique_ptr<Backend>> make_backend(const Config& config) {
  if (config.backend == "sim")
    return make_sim_backend(SimOptions{config.sim_devices, config.sim_model, config.sim_memory_mib});
  if (config.backend == "sysfs") return make_sysfs_backend(config.sysfs_root);
  if (config.backend == "xpuml") return make_xpuml_backend(config.xpuml_library, config.sysfs_root);

  return make_auto_backend(config);
}

}  // namespace xpud
