#include "k8s-shim/device_plugin/memory_share_allocation.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace shim {
namespace {

struct Unit {
  std::string id;
  bool known = false;
  unsigned index = 0;  // the card's
  unsigned unit = 0;
};

// Canonical order: known units by card index and unit number, unknown IDs last by ID.
bool in_card_order(const Unit& a, const Unit& b) {
  return std::make_tuple(!a.known, a.index, a.unit, std::cref(a.id)) <
         std::make_tuple(!b.known, b.index, b.unit, std::cref(b.id));
}

std::vector<std::string> ids_of(std::vector<Unit> units) {
  std::sort(units.begin(), units.end(), in_card_order);
  std::vector<std::string> ids;
  ids.reserve(units.size());
  for (auto& u : units) ids.push_back(std::move(u.id));
  return ids;
}

}  // namespace

xpu::Result<std::vector<std::string>> preferred_memory_allocation(
    const ResourceState& state, const AllocationRequest& request) {
  if (xpu::Status valid = check_allocation_request(request); !valid)
    return xpu::Error{valid.error()};
  // Sets: the kubelet's lists may repeat an ID; each counts once.
  const std::set<std::string> available(request.available.begin(), request.available.end());
  const std::set<std::string> must(request.must_include.begin(), request.must_include.end());
  const auto size = static_cast<std::size_t>(request.size);

  std::map<std::string, const PluginDevice*> by_id;
  for (const auto& device : state.devices) by_id.emplace(device.id, &device);

  std::vector<Unit> chosen;                       // the must-include units
  std::map<unsigned, std::vector<Unit>> free_on;  // card index -> its other available units
  std::vector<Unit> unknown_free;                 // available, not must-include, not ours
  std::set<unsigned> must_cards;
  bool must_unknown = false;
  for (const auto& id : available) {
    Unit u{id};
    if (auto it = by_id.find(id); it != by_id.end())
      u = {id, true, it->second->index, it->second->replica};
    if (must.contains(id)) {
      if (u.known)
        must_cards.insert(u.index);
      else
        must_unknown = true;
      chosen.push_back(std::move(u));
    } else if (u.known) {
      free_on[u.index].push_back(std::move(u));
    } else {
      unknown_free.push_back(std::move(u));
    }
  }
  for (auto& [index, units] : free_on) std::sort(units.begin(), units.end(), in_card_order);

  // Best fit on one card: the candidate with the fewest available units that holds the request.
  std::optional<unsigned> best;
  std::size_t best_available = 0;
  if (!must_unknown && must_cards.size() <= 1) {
    for (const auto& [index, units] : free_on) {
      if (!must_cards.empty() && index != *must_cards.begin()) continue;
      const std::size_t on_card = units.size() + chosen.size();
      if (on_card < size) continue;
      if (!best || on_card < best_available) {  // strict: the lowest index wins ties
        best = index;
        best_available = on_card;
      }
    }
  }
  if (best) {
    auto& units = free_on[*best];
    for (std::size_t i = 0; chosen.size() < size; ++i) chosen.push_back(units[i]);
    return ids_of(std::move(chosen));
  }

  // No single card: the must-include units, then the rest in card order, unknown IDs last.
  for (auto& [index, units] : free_on)
    for (auto& u : units) {
      if (chosen.size() == size) break;
      chosen.push_back(std::move(u));
    }
  std::sort(unknown_free.begin(), unknown_free.end(), in_card_order);
  for (auto& u : unknown_free) {
    if (chosen.size() == size) break;
    chosen.push_back(std::move(u));
  }
  return ids_of(std::move(chosen));
}

}  // namespace shim
