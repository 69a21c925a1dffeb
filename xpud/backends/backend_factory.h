// Builds the backend the configuration asks for. `auto` means xpuml when the library loads,
// otherwise sysfs, which moves to xpuml later when only xpumlInit failed (auto_backend.h); it
// never picks sim.
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "xpud/backends/backend.h"
#include "xpud/backends/card_reset.h"
#include "xpud/backends/simulator.h"
#include "xpud/config.h"

namespace xpud {

// The backend, and beside it the sim backend's fault injection (null for every other backend).
struct StartedBackend {
  std::shared_ptr<Backend> backend;
  std::shared_ptr<Simulator> simulator;
  // Where the cards' device nodes really are on this host when not at their own paths, for the
  // CDI spec's hostPath: the sim backend's /dev/xpuN do not exist, so they stand in for
  // kSimDeviceNodeStandIn. Empty for the hardware backends: each node is at its path.
  std::string host_node_stand_in;
  // How a card is reset: the kernel's reset of its PCI function for every hardware backend (the
  // same sysfs file whichever of them reads the card), the simulated card's for sim.
  std::shared_ptr<CardResetControl> card_reset;
};

xpu::Result<StartedBackend> make_backend(const Config& config);

}  // namespace xpud
