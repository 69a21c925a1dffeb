// The simulated backend: N cards of one model with the 8-card topology of xpu-facts.md and
// metrics that move plausibly over time, plus fault injection. For demos, tests and CI; `auto`
// never selects it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "xpud/backends/backend.h"
#include "xpud/backends/simulator.h"

namespace xpud {

struct SimOptions {
  unsigned devices = 8;
  std::string model = "R200";
  std::uint64_t memory_mib = 32768;
};

// One object behind two interfaces: the Backend the sampler drives, and the Simulator that
// tests and demos inject faults through. The injection side stays out of Backend: real drivers
// have nothing like it.
struct SimBackend {
  std::shared_ptr<Backend> backend;
  std::shared_ptr<Simulator> simulator;
};

SimBackend make_sim_backend(const SimOptions& options);

}  // namespace xpud
