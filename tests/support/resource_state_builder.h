// What the device plugin advertises, as the tests build it: the default resource's whole cards
// and the shared resource's replicas (shim::ResourceState), before any test-specific change.
#pragma once

#include <vector>

#include "k8s-shim/device_plugin/resource_plan.h"

namespace xpu::test {

// kunlunxin.com/xpu on kunlunxin-xpu.sock: card i is device "uuid-<i>", healthy, 32 GiB; no
// topology (NUMA node unknown, no links).
shim::ResourceState whole_cards(std::vector<unsigned> indices);

// kunlunxin.com/xpu-shared on kunlunxin-xpu-shared.sock: card i advertised `replicas` times as
// "uuid-<i>::<r>", every replica healthy; no memory, no topology.
shim::ResourceState shared_cards(std::vector<unsigned> indices, unsigned replicas);

}  // namespace xpu::test
