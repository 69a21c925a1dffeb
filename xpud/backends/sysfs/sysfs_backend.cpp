// Placeholder until the sysfs backend lands.
#include "xpud/backends/sysfs/sysfs_backend.h"

namespace xpud {
xpu::Result<std::unique_ptr<Backend>> make_sysfs_backend(const std::filesystem::path&) {
  return xpu::Error{"sysfs backend not implemented yet"};
}
}  // namespace xpud
