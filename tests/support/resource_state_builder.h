// What the device plugin advertises, as the tests build it: the default resource's whole cards,
// the shared resource's replicas and memory units (shim::ResourceState), before any
// test-specific change.
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

// kunlunxin.com/vxpu-memory on kunlunxin-vxpu-memory.sock in units of 1 GiB: card i (the i-th
// index) advertised units[i] times as "uuid-<index>::m<k>", every unit healthy; no topology.
shim::ResourceState memory_unit_cards(std::vector<unsigned> indices, std::vector<unsigned> units);

}  // namespace xpu::test
