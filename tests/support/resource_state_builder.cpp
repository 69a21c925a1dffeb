#include "tests/support/resource_state_builder.h"

#include <string>

namespace xpu::test {

shim::ResourceState whole_cards(std::vector<unsigned> indices) {
  shim::ResourceState state{"kunlunxin.com/xpu", "kunlunxin-xpu.sock", {}};
  for (unsigned i : indices) {
    shim::PluginDevice d;
    d.id = "uuid-" + std::to_string(i);
    d.index = i;
    d.memory_total_bytes = 32ull << 30;
    d.healthy = true;
    state.devices.push_back(d);
  }
  return state;
}

shim::ResourceState shared_cards(std::vector<unsigned> indices, unsigned replicas) {
  shim::ResourceState state{"kunlunxin.com/xpu-shared", "kunlunxin-xpu-shared.sock", {}, true};
  for (unsigned i : indices)
    for (unsigned r = 0; r < replicas; ++r) {
      shim::PluginDevice d;
      d.card_id = "uuid-" + std::to_string(i);
      d.id = d.card_id + "::" + std::to_string(r);
      d.index = i;
      d.replica = r;
      d.healthy = true;
      state.devices.push_back(d);
    }
  return state;
}

shim::ResourceState memory_unit_cards(std::vector<unsigned> indices, std::vector<unsigned> units) {
  shim::ResourceState state{
      "kunlunxin.com/vxpu-memory", "kunlunxin-vxpu-memory.sock", {}, true, 1ull << 30};
  for (std::size_t i = 0; i < indices.size() && i < units.size(); ++i)
    for (unsigned k = 0; k < units[i]; ++k) {
      shim::PluginDevice d;
      d.card_id = "uuid-" + std::to_string(indices[i]);
      d.id = d.card_id + "::m" + std::to_string(k);
      d.index = indices[i];
      d.replica = k;
      d.memory_total_bytes = std::uint64_t{units[i]} << 30;
      d.healthy = true;
      state.devices.push_back(d);
    }
  return state;
}

}  // namespace xpu::test
