#include "k8s-shim/device_plugin/topology_allocator.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "k8s-shim/printable.h"

namespace shim {
namespace {

// Number of k-subsets of n, or limit + 1 when it exceeds limit (no overflow on big nodes).
std::uint64_t capped_binomial(std::uint64_t n, std::uint64_t k, std::uint64_t limit) {
  if (k > n) return 0;
  k = std::min(k, n - k);
  std::uint64_t result = 1;
  for (std::uint64_t i = 1; i <= k; ++i) {
    // result * (n - k + i) / i stays exact because result is C(n - k + i - 1, i - 1).
    result = result * (n - k + i) / i;
    if (result > limit) return limit + 1;
  }
  return result;
}

}  // namespace

// The cards one request can choose from, with the topology flattened to dense indices.
struct TopologyAllocator::Candidate {
  std::vector<std::string> ids;              // pool order: known cards by index, then unknown IDs
  std::vector<bool> unknown;                 // not in the allocator's device list
  std::vector<std::size_t> group;            // dense NUMA group of each pool entry
  std::vector<std::size_t> group_available;  // pool entries per group
  std::vector<std::uint8_t> linked;          // n x n, row-major
  bool is_linked(std::size_t a, std::size_t b) const { return linked[a * ids.size() + b] != 0; }
};

// Smaller is better in every field, so sets compare as tuples.
struct TopologyAllocator::Score {
  std::size_t unknown = 0;
  std::size_t numa_nodes = 0;
  bool not_fully_linked = false;
  std::int64_t neg_min_degree = 0;
  std::int64_t neg_links = 0;
  std::size_t leftover = 0;

  auto key() const {
    return std::tie(unknown, numa_nodes, not_fully_linked, neg_min_degree, neg_links, leftover);
  }
  bool better_than(const Score& other) const { return key() < other.key(); }
};

TopologyAllocator::TopologyAllocator(std::vector<TopologyDevice> devices)
    : devices_(std::move(devices)) {
  std::sort(devices_.begin(), devices_.end(), [](const auto& a, const auto& b) {
    return std::tie(a.index, a.id) < std::tie(b.index, b.id);
  });
}

xpu::Status check_allocation_request(const AllocationRequest& request) {
  const std::set<std::string> available(request.available.begin(), request.available.end());
  const std::set<std::string> must(request.must_include.begin(), request.must_include.end());
  if (request.size < 1)
    return xpu::Error{"allocation size " + std::to_string(request.size) + " is not positive"};
  if (static_cast<std::uint64_t>(request.size) > available.size())
    return xpu::Error{"allocation size " + std::to_string(request.size) + " exceeds the " +
                      std::to_string(available.size()) + " available devices"};
  for (const auto& id : must)
    if (!available.contains(id))
      return xpu::Error{"must-include device '" + printable_excerpt(id) +
                        "' is not among the available devices"};
  if (must.size() > static_cast<std::uint64_t>(request.size))
    return xpu::Error{"must-include lists " + std::to_string(must.size()) +
                      " devices, more than the allocation size " + std::to_string(request.size)};
  return xpu::ok_status();
}

xpu::Result<std::vector<std::string>> TopologyAllocator::preferred(
    const AllocationRequest& request) const {
  const std::set<std::string> available(request.available.begin(), request.available.end());
  const std::set<std::string> must(request.must_include.begin(), request.must_include.end());

  if (xpu::Status valid = check_allocation_request(request); !valid)
    return xpu::Error{valid.error()};

  // Pool: the available cards in a canonical order, so the answer never depends on the order
  // the request listed them in.
  Candidate pool;
  std::unordered_map<std::string, std::size_t> known_position;
  std::map<int, std::size_t> group_of_numa;
  for (const auto& device : devices_) {
    if (!available.contains(device.id) || known_position.contains(device.id)) continue;
    known_position.emplace(device.id, pool.ids.size());
    pool.ids.push_back(device.id);
    pool.unknown.push_back(false);
    int numa = device.numa_node < 0 ? -1 : device.numa_node;
    auto [it, inserted] = group_of_numa.try_emplace(numa, pool.group_available.size());
    if (inserted) pool.group_available.push_back(0);
    pool.group.push_back(it->second);
    ++pool.group_available[it->second];
  }
  for (const auto& id : available) {  // std::set: sorted, so unknown IDs come in a fixed order
    if (known_position.contains(id)) continue;
    pool.ids.push_back(id);
    pool.unknown.push_back(true);
    pool.group.push_back(pool.group_available.size());  // a group of its own: no locality known
    pool.group_available.push_back(1);
  }
  const std::size_t n = pool.ids.size();
  pool.linked.assign(n * n, 0);
  for (const auto& device : devices_) {
    auto from = known_position.find(device.id);
    if (from == known_position.end()) continue;
    for (const auto& peer : device.linked_ids) {
      auto to = known_position.find(peer);
      if (to == known_position.end() || to->second == from->second) continue;
      // A link either side reports is a link: one-sided reports are a driver quirk, not a cut.
      pool.linked[from->second * n + to->second] = 1;
      pool.linked[to->second * n + from->second] = 1;
    }
  }

  std::vector<std::size_t> fixed;
  std::vector<std::size_t> free;
  for (std::size_t i = 0; i < n; ++i) (must.contains(pool.ids[i]) ? fixed : free).push_back(i);
  const std::size_t want = static_cast<std::size_t>(request.size) - fixed.size();

  std::vector<std::size_t> group_count(pool.group_available.size(), 0);
  std::vector<std::int64_t> degree;
  auto score_of = [&pool, &group_count, &degree](const std::vector<std::size_t>& chosen) {
    Score score;
    std::fill(group_count.begin(), group_count.end(), 0);
    degree.assign(chosen.size(), 0);
    std::int64_t links = 0;
    for (std::size_t i = 0; i < chosen.size(); ++i) {
      if (pool.unknown[chosen[i]]) ++score.unknown;
      if (group_count[pool.group[chosen[i]]]++ == 0) ++score.numa_nodes;
      for (std::size_t j = i + 1; j < chosen.size(); ++j) {
        if (!pool.is_linked(chosen[i], chosen[j])) continue;
        ++degree[i];
        ++degree[j];
        ++links;
      }
    }
    const auto pairs = static_cast<std::int64_t>(chosen.size() * (chosen.size() - 1) / 2);
    score.not_fully_linked = links != pairs;
    score.neg_min_degree = -*std::min_element(degree.begin(), degree.end());
    score.neg_links = -links;
    for (std::size_t g = 0; g < group_count.size(); ++g)
      if (group_count[g] > 0) score.leftover += pool.group_available[g] - group_count[g];
    return score;
  };

  std::vector<std::size_t> best = fixed;
  if (want > 0) {
    std::vector<std::size_t> chosen = fixed;
    chosen.resize(fixed.size() + want);
    Score best_score;
    bool have_best = false;
    auto consider = [&](const std::vector<std::size_t>& set) {
      Score score = score_of(set);
      // Strictly better only: on a tie the earlier set (lower indices) stays.
      if (!have_best || score.better_than(best_score)) {
        best_score = score;
        best = set;
        have_best = true;
      }
    };
    if (capped_binomial(free.size(), want, kExhaustiveLimit) <= kExhaustiveLimit) {
      // Every want-subset of `free`, in lexicographic order of positions.
      std::vector<std::size_t> pick(want);
      for (std::size_t i = 0; i < want; ++i) pick[i] = i;
      while (true) {
        for (std::size_t i = 0; i < want; ++i) chosen[fixed.size() + i] = free[pick[i]];
        consider(chosen);
        std::size_t i = want;
        while (i > 0 && pick[i - 1] == free.size() - want + (i - 1)) --i;
        if (i == 0) break;
        ++pick[i - 1];
        for (std::size_t j = i; j < want; ++j) pick[j] = pick[j - 1] + 1;
      }
    } else {
      std::vector<std::size_t> grown = fixed;
      std::vector<bool> taken(n, false);
      for (std::size_t i : fixed) taken[i] = true;
      for (std::size_t step = 0; step < want; ++step) {
        have_best = false;
        std::vector<std::size_t> trial = grown;
        trial.push_back(0);
        for (std::size_t c : free) {
          if (taken[c]) continue;
          trial.back() = c;
          consider(trial);
        }
        grown = best;
        taken[grown.back()] = true;
      }
    }
  }

  std::sort(best.begin(), best.end());
  std::vector<std::string> ids;
  ids.reserve(best.size());
  for (std::size_t i : best) ids.push_back(pool.ids[i]);
  return ids;
}

}  // namespace shim
