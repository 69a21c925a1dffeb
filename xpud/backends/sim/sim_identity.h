// Who the simulated cards are: the physical cards, with the 8-card topology of xpu-facts.md, and
// the SR-IOV virtual functions the sim makes of them. Pure functions of the options, so the same
// configuration gives the same identities in every run.
#pragma once

#include <cstdint>

#include "xpud/backends/sim/sim_backend.h"
#include "xpud/device.h"

namespace xpud::sim {

// The vendor's header (xpuml_api.h) names an R200's virtual functions one of one, one of two and
// one of three (XPUML_DEVICE_MODEL_KL2_R200_SRIOV_VF_ONE_OF_ONE .. _ONE_OF_THREE): no smaller
// share exists, so a simulated card's sriov_totalvfs is 3.
inline constexpr unsigned kMaxVirtualFunctions = 3;

// Physical card `index` of a sim configured by `options`.
DeviceIdentity physical_card_identity(const SimOptions& options, unsigned index);

// What each of `count` virtual functions of a card with `card_memory_bytes` gets: an equal
// share rounded down to whole GiB, as the vendor's names say (a 16 GiB R200: R200-VF-16G, -8G,
// -5G). 0 when the share is under 1 GiB.
std::uint64_t virtual_function_memory_bytes(std::uint64_t card_memory_bytes, unsigned count);

// Virtual function `function` (1..count) of `card`, at host index `index`: its own PCI function
// on the card's bus, the card's NUMA node and root complex, no links.
DeviceIdentity virtual_function_identity(const DeviceIdentity& card, unsigned count,
                                         unsigned function, unsigned index);

}  // namespace xpud::sim
