// Builds the backend the configuration asks for. `auto` means xpuml when the library loads,
// otherwise sysfs, which moves to xpuml later when only xpumlInit failed (auto_backend.h); it
// never picks sim.
#pragma once

#include <memory>

#include "common/result.h"
#include "xpud/backends/backend.h"
#include "xpud/config.h"

namespace xpud {

xpu::Result<std::unique_ptr<Backend>> make_backend(const Config& config);

}  // namespace xpud
