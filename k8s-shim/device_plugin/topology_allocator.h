// Picks which cards to hand a container when the kubelet asks for a preference
// (GetPreferredAllocation). Pure: the topology comes in as plain data (NUMA node and direct links,
// as xpud reports them), so it works for any card count and is tested without gRPC or D-Bus.
//
// Among the sets that contain every must-include card, it prefers, in this order:
//   1. the fewest NUMA nodes (a 2- or 4-card set stays inside one half when one is free);
//   2. sets where every pair of cards is directly linked;
//   3. the largest minimum number of links a card has inside the set (on the 8-card topology this
//      picks exactly the linked 4-card groups 0-1-4-5, 2-3-6-7, 0-2-4-6, 1-3-5-7, 0-3-4-7,
//      1-2-5-6 when a group has to cross halves);
//   4. the most links inside the set;
//   5. the fewest free cards left behind on the NUMA nodes it touches (best fit: keeps whole
//      groups free for later, bigger requests);
//   6. the lowest card indices.
// The answer depends only on the sets involved, never on the order IDs arrive in, and lists the
// chosen IDs in ascending card index.
//
// Bad requests get an error naming the problem (the gRPC layer turns it into INVALID_ARGUMENT):
// a size below 1, a size above the number of available cards, more must-include cards than the
// size, or a must-include card that is not available. Available IDs the allocator does not know
// (e.g. a card that vanished) are still valid answers but are used only when nothing else fits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace shim {

struct TopologyDevice {
  std::string id;
  unsigned index = 0;
  int numa_node = -1;                   // -1: unknown
  std::vector<std::string> linked_ids;  // directly linked cards
};

struct AllocationRequest {
  std::vector<std::string> available;
  std::vector<std::string> must_include;
  std::int64_t size = 0;
};

// The checks every allocator applies before choosing (INVALID_ARGUMENT on failure): size at least
// 1 and at most the available count, every must-include ID available, no more of them than size.
xpu::Status check_allocation_request(const AllocationRequest& request);

class TopologyAllocator {
 public:
  explicit TopologyAllocator(std::vector<TopologyDevice> devices);

  xpu::Result<std::vector<std::string>> preferred(const AllocationRequest& request) const;

  // Above this many candidate sets the search turns greedy (one card at a time, same order of
  // preference), so a node with very many cards still answers at once.
  static constexpr std::uint64_t kExhaustiveLimit = 50000;

 private:
  struct Candidate;
  struct Score;

  std::vector<TopologyDevice> devices_;  // ordered by index, then ID
};

}  // namespace shim
