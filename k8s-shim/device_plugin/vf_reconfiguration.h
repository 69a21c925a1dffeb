// --reconfig-vxpu: the device plugin asks xpud (Manager.ConfigureVirtualFunctions, through
// xpud's API socket) to give every physical card --sriov-num-vfs virtual functions. Whether that
// is allowed is the host's decision ([sriov] allow_cluster_reconfigure in xpud's configuration,
// false by default); a refusal is logged and not repeated.
//
// Each card is asked once per xpud session (again after xpud restarts, or when a card
// reappears), and only while the node's virtual-function count differs from N x physical cards,
// so a node that is already right is never touched. Cards are asked one at a time from the
// device plugin's main loop, so a stop signal waits for at most one call.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>

#include "common/result.h"
#include "common/xpud_types.h"

namespace shim {

// The physical card to ask next: the lowest index whose UUID is not in `asked`, while the
// node's virtual functions differ from `vfs_per_card` x physical cards; nullopt when there is
// nothing (more) to ask (xpud absent, count right, N = 0, every card asked).
std::optional<xpu::DeviceInfo> next_card_to_reconfigure(const xpu::DeviceView& view,
                                                        unsigned vfs_per_card,
                                                        const std::set<std::string>& asked);

class VfReconfiguration {
 public:
  // Makes one ConfigureVirtualFunctions call (xpud's error message when it fails).
  using Configure = std::function<xpu::Status(unsigned index, unsigned count)>;

  VfReconfiguration(unsigned vfs_per_card, Configure configure);

  // Asks for at most one card; true when another one is waiting (call again soon).
  bool step(const xpu::DeviceView& view);

 private:
  unsigned vfs_per_card_;
  Configure configure_;
  std::set<std::string> asked_;  // card UUIDs asked during this xpud session
};

}  // namespace shim
