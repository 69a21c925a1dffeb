// The simulated backend: N cards of one model with the 8-card topology of xpu-facts.md and
// metrics that move plausibly over time, plus fault injection, cXPU instances and SR-IOV virtual
// functions (1 to 3 per card, the vendor's R200-VF shares: sim_identity.h). For demos, tests and
// CI; `auto` never selects it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "xpud/backends/backend.h"
#include "xpud/backends/card_reset.h"
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
  std::shared_ptr<CardResetControl> card_reset;
};

// The simulated cards list /dev/xpuN and /dev/xpuctrl as their nodes, like real ones, but no
// such nodes exist on a host without cards. What a container runtime needs to inject them (CDI
// hostPath) is a character device that exists everywhere and does nothing: /dev/null, which is
// also what the real-node suite's stand-in nodes are (c 1 3). The container still sees
// /dev/xpuN.
inline constexpr std::string_view kSimDeviceNodeStandIn = "/dev/null";

SimBackend make_sim_backend(const SimOptions& options);

}  // namespace xpud
