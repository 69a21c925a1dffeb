// GetPreferredAllocation for a shared resource (--enable-xpu-share), whose devices are replicas
// `<uuid>::<n>` of physical cards. Pure.
//
// Policy: spread. Each further replica comes from the card the answer uses least so far, ties
// going to the card with the most replicas still available (the least loaded card), then the
// lowest card index and replica number. A container asking for two replicas thus gets two cards
// when two are free, and cards fill up evenly. Must-include replicas are kept; available IDs the
// plugin does not know are used only when nothing else is left. The answer is in ascending card
// index and replica number, whatever the order of the request's IDs.
// Bad requests get the same errors as the whole-card allocator (size < 1, size > available,
// more must-include than size, a must-include ID that is not available).
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "k8s-shim/device_plugin/resource_plan.h"
#include "k8s-shim/device_plugin/topology_allocator.h"

namespace shim {

xpu::Result<std::vector<std::string>> preferred_shared_allocation(const ResourceState& state,
                                                                  const AllocationRequest& request);

}  // namespace shim
