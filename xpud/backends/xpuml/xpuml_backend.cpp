// Placeholder until the xpuml backend lands.
#include "xpud/backends/xpuml/xpuml_backend.h"

namespace xpud {
xpu::Result<std::unique_ptr<Backend>> make_xpuml_backend(const std::filesystem::path&,
                                                         const std::filesystem::path&) {
  return xpu::Error{"xpuml backend not implemented yet"};
}
}  // namespace xpud
