// The simulated backend: N cards of one model with the 8-card topology of xpu-facts.md and
// metrics that move plausibly over time, plus fault injection. For demos, tests and CI; `auto`
// never selects it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "xpud/backends/backend.h"

namespace xpud {

struct SimOptions {
  unsigned devices = 8;
  std::string model = "R200";
  std::uint64_t memory_mib = 32768;
};

std::unique_ptr<Backend> make_sim_backend(const SimOptions& options);

}  // namespace xpud
