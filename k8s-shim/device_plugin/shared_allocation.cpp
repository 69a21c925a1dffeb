#include "k8s-shim/device_plugin/shared_allocation.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace shim {
namespace {

struct Replica {
  std::string id;
  bool known = false;
  unsigned index = 0;
  unsigned replica = 0;
};

// Canonical order: known replicas by card index and replica number, unknown IDs last by ID.
bool before(const Replica& a, const Replica& b) {
  return std::make_tuple(!a.known, a.index, a.replica, std::cref(a.id)) <
         std::make_tuple(!b.known, b.index, b.replica, std::cref(b.id));
}

}  // namespace

xpu::Result<std::vector<std::string>> preferred_shared_allocation(
    const ResourceState& state, const AllocationRequest& request) {
  const std::set<std::string> available(request.available.begin(), request.available.end());
  const std::set<std::string> must(request.must_include.begin(), request.must_include.end());
  if (xpu::Status valid = check_allocation_request(request); !valid)
    return xpu::Error{valid.error()};

  std::map<std::string, const PluginDevice*> by_id;
  for (const auto& device : state.devices) by_id.emplace(device.id, &device);

  std::vector<Replica> chosen;
  std::vector<Replica> free;
  std::map<unsigned, std::size_t> used;       // card index -> replicas in the answer
  std::map<unsigned, std::size_t> remaining;  // card index -> replicas available, not chosen
  for (const auto& id : available) {
    Replica r{id};
    if (auto it = by_id.find(id); it != by_id.end())
      r = {id, true, it->second->index, it->second->replica};
    if (must.contains(id)) {
      chosen.push_back(r);
      if (r.known) ++used[r.index];
    } else {
      free.push_back(r);
      if (r.known) ++remaining[r.index];
    }
  }
  std::sort(free.begin(), free.end(), before);

  while (chosen.size() < static_cast<std::size_t>(request.size)) {
    auto best = free.begin();
    auto key = [&](const Replica& r) {
      // Least used in the answer, then most left free (least loaded); index order breaks ties.
      return std::make_tuple(!r.known, r.known ? used[r.index] : 0,
                             r.known ? ~remaining[r.index] : 0);
    };
    for (auto it = free.begin(); it != free.end(); ++it)
      if (key(*it) < key(*best)) best = it;  // strict: the earliest in canonical order wins ties
    if (best->known) {
      ++used[best->index];
      --remaining[best->index];
    }
    chosen.push_back(*best);
    free.erase(best);
  }
  std::sort(chosen.begin(), chosen.end(), before);
  std::vector<std::string> ids;
  ids.reserve(chosen.size());
  for (const auto& r : chosen) ids.push_back(r.id);
  return ids;
}

}  // namespace shim
