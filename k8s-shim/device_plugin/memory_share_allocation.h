// GetPreferredAllocation for the memory form of shared mode (--xpu-share-memory-unit-mib), whose
// devices are units `<uuid>::m<k>` of a card's memory. Pure.
//
// Policy: one card, best fit. A container's units bound its memory on each of its cards by the
// card it holds the fewest units of (container_allocation.h), so units spread over cards would be
// memory granted and never usable. The answer takes every unit from the card with the fewest
// available units that still holds the request (ties: the lowest card index), which keeps the
// emptier cards for larger requests. Must-include units on one card pin that card. When the
// must-include units span cards, or no single card holds the request, the answer is the
// must-include units plus the remaining units in card order (the kubelet asks for a preference
// only; it may allocate anything). Available IDs the plugin does not know come last, only when
// nothing else is left. The answer is in ascending card index and unit number.
// Bad requests get the same errors as the other allocators (check_allocation_request).
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "k8s-shim/device_plugin/resource_plan.h"
#include "k8s-shim/device_plugin/topology_allocator.h"

namespace shim {

xpu::Result<std::vector<std::string>> preferred_memory_allocation(const ResourceState& state,
                                                                  const AllocationRequest& request);

}  // namespace shim
