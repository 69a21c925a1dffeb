#include "xpud/backends/backend_factory.h"

#include <spdlog/spdlog.h>

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

  bool init_failed = false;
  auto xpuml = make_xpuml_backend(config.xpuml_library, config.sysfs_root, &init_failed);
  if (xpuml) return xpuml;
  auto sysfs = make_sysfs_backend(config.sysfs_root);
  if (!sysfs)
    return xpu::Error{"no backend available: xpuml: " + xpuml.error() + "; sysfs: " + sysfs.error()};
  if (!init_failed) {
    // No usable library: nothing will change without an install, which restarts xpud anyway.
    spdlog::info("backend auto: xpuml unavailable ({}), using sysfs", xpuml.error());
    return sysfs;
  }
  // The library is there but the driver is not (yet): keep trying (auto_backend.h).
  const RetryBackoff backoff;
  spdlog::warn("backend auto: libxpuml cannot initialise ({}); serving from sysfs without metrics "
               "and retrying every {} s, backing off to {} s",
               xpuml.error(), backoff.first.count() / 1000, backoff.longest.count() / 1000);
  return std::unique_ptr<Backend>(std::make_unique<AutoBackend>(
      std::move(*sysfs),
      [library = config.xpuml_library, root = config.sysfs_root] {
        return make_xpuml_backend(library, root);
      },
      xpuml.error(), config.call_timeout, backoff));
}

}  // namespace xpud
