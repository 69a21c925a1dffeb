#include "k8s-shim/device_plugin/topology_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <set>

namespace shim {
namespace {

// IDs whose alphabetical order is the reverse of the card order, so a result that silently
// follows string order instead of topology shows up.
std::string id_of(unsigned index) {
  return std::string("XPU-") + static_cast<char>('z' - index);
}

// The 8-card node of xpu-facts.md: 0-3 on NUMA 0, 4-7 on NUMA 1, all pairs inside a half linked,
// cross links 0-4 1-5 2-6 3-7.
std::vector<TopologyDevice> eight_cards() {
  std::vector<TopologyDevice> devices;
  for (unsigned i = 0; i < 8; ++i) {
    TopologyDevice d{id_of(i), i, i < 4 ? 0 : 1, {}};
    for (unsigned j = 0; j < 8; ++j)
      if (j != i && ((i < 4) == (j < 4) || j == (i + 4) % 8)) d.linked_ids.push_back(id_of(j));
    devices.push_back(d);
  }
  return devices;
}

using Mask = unsigned;  // bit i: card i

std::vector<std::string> ids_of(Mask mask) {
  std::vector<std::string> ids;
  for (unsigned i = 0; i < 8; ++i)
    if (mask & (1u << i)) ids.push_back(id_of(i));
  return ids;
}

xpu::Result<Mask> mask_of(const std::vector<std::string>& ids) {
  Mask mask = 0;
  for (const auto& id : ids) {
    bool found = false;
    for (unsigned i = 0; i < 8; ++i)
      if (id == id_of(i)) {
        if (mask & (1u << i)) return xpu::Error{"duplicate " + id};
        mask |= 1u << i;
        found = true;
      }
    if (!found) return xpu::Error{"unknown " + id};
  }
  return mask;
}

std::string describe(Mask mask) {
  std::string out = "{";
  for (unsigned i = 0; i < 8; ++i)
    if (mask & (1u << i)) out += (out.size() > 1 ? "," : "") + std::to_string(i);
  return out + "}";
}

constexpr Mask kHalf0 = 0x0f;
constexpr Mask kHalf1 = 0xf0;
bool linked(unsigned a, unsigned b) {
  return a != b && ((a < 4) == (b < 4) || b == (a + 4) % 8);
}
constexpr std::array<Mask, 6> kGoodCrossGroups = {
    0b00110011,  // 0-1-4-5
    0b11001100,  // 2-3-6-7
    0b01010101,  // 0-2-4-6
    0b10101010,  // 1-3-5-7
    0b10011001,  // 0-3-4-7
    0b01100110,  // 1-2-5-6
};

bool fits(Mask set, Mask must, Mask available) {
  return (set & must) == must && (set & ~available) == 0;
}

// Every subset of `mask` (including 0 and mask itself).
std::vector<Mask> subsets(Mask mask) {
  std::vector<Mask> out;
  for (Mask s = mask;; s = (s - 1) & mask) {
    out.push_back(s);
    if (s == 0) break;
  }
  return out;
}

TEST(TopologyAllocator, ExhaustiveOverEightCardTopology) {
  const TopologyAllocator allocator(eight_cards());
  std::size_t checked = 0;
  for (Mask available = 0; available < 256; ++available) {
    const int free = std::popcount(available);
    for (int size : {1, 2, 4, 8}) {
      for (Mask must : subsets(available)) {
        const int must_count = std::popcount(must);
        AllocationRequest request{ids_of(available), ids_of(must), size};
        auto result = allocator.preferred(request);
        const std::string where = "available " + describe(available) + " must " + describe(must) +
                                  " size " + std::to_string(size);
        if (size > free || must_count > size) {
          ASSERT_FALSE(result.ok()) << where;
          continue;
        }
        ASSERT_TRUE(result.ok()) << where << ": " << result.error();
        ++checked;
        auto chosen = mask_of(*result);
        ASSERT_TRUE(chosen.ok()) << where << ": " << chosen.error();
        const Mask r = *chosen;
        ASSERT_EQ(std::popcount(r), size) << where;
        ASSERT_TRUE(fits(r, must, available)) << where << " -> " << describe(r);
        // Ascending card index.
        ASSERT_EQ(*result, ids_of(r)) << where;

        // Deterministic: the same sets in another order give the same answer.
        AllocationRequest shuffled = request;
        std::reverse(shuffled.available.begin(), shuffled.available.end());
        std::rotate(shuffled.must_include.begin(),
                    shuffled.must_include.begin() + (shuffled.must_include.size() / 2),
                    shuffled.must_include.end());
        auto again = allocator.preferred(shuffled);
        ASSERT_TRUE(again.ok()) << where;
        ASSERT_EQ(*again, *result) << where << " (reordered request)";

        // One NUMA half whenever one can hold the whole set.
        const bool one_half_possible =
            ((must & ~kHalf0) == 0 && std::popcount(available & kHalf0) >= size) ||
            ((must & ~kHalf1) == 0 && std::popcount(available & kHalf1) >= size);
        if (one_half_possible) {
          ASSERT_TRUE((r & ~kHalf0) == 0 || (r & ~kHalf1) == 0) << where << " -> " << describe(r);
        }

        if (size == 2 && !one_half_possible) {
          bool linked_pair_possible = false;
          for (unsigned a = 0; a < 8; ++a)
            for (unsigned b = a + 1; b < 8; ++b)
              linked_pair_possible |= linked(a, b) && fits((1u << a) | (1u << b), must, available);
          if (linked_pair_possible) {
            const unsigned a = static_cast<unsigned>(std::countr_zero(r));
            const unsigned b = static_cast<unsigned>(31 - std::countl_zero(r));
            ASSERT_TRUE(linked(a, b)) << where << " -> " << describe(r);
          }
        }
        if (size == 4 && one_half_possible) {
          ASSERT_TRUE(r == kHalf0 || r == kHalf1) << where << " -> " << describe(r);
        }
        if (size == 4 && !one_half_possible) {
          bool good_possible = false;
          for (Mask g : kGoodCrossGroups) good_possible |= fits(g, must, available);
          if (good_possible) {
            ASSERT_NE(std::find(kGoodCrossGroups.begin(), kGoodCrossGroups.end(), r),
                      kGoodCrossGroups.end())
                << where << " -> " << describe(r);
          }
        }
        if (size == 8) {
          ASSERT_EQ(r, 0xffu) << where;
        }

        // A single card comes from the half with the fewest free cards (keeps bigger groups whole).
        if (size == 1 && must == 0) {
          const int free0 = std::popcount(available & kHalf0),
                    free1 = std::popcount(available & kHalf1);
          const Mask best_half = free0 == 0       ? kHalf1
                                 : free1 == 0     ? kHalf0
                                 : free0 <= free1 ? kHalf0
                                                  : kHalf1;
          if (free0 != free1) {
            ASSERT_TRUE((r & best_half) != 0) << where << " -> " << describe(r);
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 9000u);  // the loop really covered the space
}

TEST(TopologyAllocator, FullNodeAnswersMatchTheDocumentedGroups) {
  const TopologyAllocator allocator(eight_cards());
  auto pick = [&](Mask available, Mask must, int size) {
    auto result = allocator.preferred({ids_of(available), ids_of(must), size});
    EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error());
    return result.ok() ? *mask_of(*result) : 0u;
  };
  EXPECT_EQ(pick(0xff, 0, 1), 0b00000001u);
  EXPECT_EQ(pick(0xff, 0, 2), 0b00000011u);
  EXPECT_EQ(pick(0xff, 0, 4), kHalf0);
  EXPECT_EQ(pick(0xff, 1u << 5, 4), kHalf1);
  // Card 2 of the first half is taken and card 7 of the second: the best linked group across.
  EXPECT_EQ(pick(0xff & ~(1u << 2) & ~(1u << 7), 0, 4), 0b00110011u);  // 0-1-4-5
  // Best fit: half 1 has fewer free cards, so the single card comes from there.
  EXPECT_EQ(pick(0b01101111, 0, 1), 1u << 5);
  // Best fit for pairs: the half with exactly two free cards.
  EXPECT_EQ(pick(0b00110111, 0, 2), 0b00110000u);
  // must-include across halves keeps a linked group.
  EXPECT_EQ(pick(0xff, (1u << 0) | (1u << 6), 4), 0b01010101u);  // 0-2-4-6
}

TEST(TopologyAllocator, RejectsBadRequestsWithClearErrors) {
  const TopologyAllocator allocator(eight_cards());
  auto error_of = [&](AllocationRequest request) {
    auto result = allocator.preferred(request);
    return result.ok() ? std::string("(no error)") : result.error();
  };
  EXPECT_EQ(error_of({ids_of(0xff), {}, 0}), "allocation size 0 is not positive");
  EXPECT_EQ(error_of({ids_of(0xff), {}, -3}), "allocation size -3 is not positive");
  EXPECT_EQ(error_of({ids_of(0x03), {}, 3}), "allocation size 3 exceeds the 2 available devices");
  EXPECT_EQ(error_of({ids_of(0x03), {id_of(5)}, 1}),
            "must-include device 'XPU-u' is not among the available devices");
  EXPECT_EQ(error_of({ids_of(0xff), ids_of(0x07), 2}),
            "must-include lists 3 devices, more than the allocation size 2");
  // An ID from the kubelet is escaped in the refusal (found by fuzz/device_plugin_fuzzer).
  EXPECT_EQ(error_of({ids_of(0x03), {"a\r\nb"}, 1}),
            "must-include device 'a\\x0d\\x0ab' is not among the available devices");
}

TEST(TopologyAllocator, DuplicatesInTheRequestCountOnce) {
  const TopologyAllocator allocator(eight_cards());
  const auto once = ids_of(0x30);
  auto available = once;
  available.insert(available.end(), once.begin(), once.end());
  auto result = allocator.preferred({available, {id_of(4), id_of(4)}, 2});
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(*result, ids_of(0x30));
  EXPECT_FALSE(allocator.preferred({available, {}, 3}).ok());  // only two distinct cards
}

TEST(TopologyAllocator, UnknownIdsAreValidButUsedLast) {
  const TopologyAllocator allocator(eight_cards());
  std::vector<std::string> available = {"gone-card", id_of(6)};
  auto one = allocator.preferred({available, {}, 1});
  ASSERT_TRUE(one.ok()) << one.error();
  EXPECT_EQ(*one, std::vector<std::string>{id_of(6)});
  auto two = allocator.preferred({available, {}, 2});
  ASSERT_TRUE(two.ok()) << two.error();
  EXPECT_EQ(*two, (std::vector<std::string>{id_of(6), "gone-card"}));
}

TEST(TopologyAllocator, WithoutTopologyPicksLowestIndices) {
  std::vector<TopologyDevice> devices;
  for (unsigned i = 0; i < 4; ++i) devices.push_back({"card-" + std::to_string(3 - i), i, -1, {}});
  const TopologyAllocator allocator(devices);
  auto result = allocator.preferred({{"card-0", "card-1", "card-2", "card-3"}, {}, 2});
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(*result, (std::vector<std::string>{"card-3", "card-2"}));  // indices 0 and 1
}

TEST(TopologyAllocator, OneSidedLinksCount) {
  // Only card 0 reports its link to 3; the pair is still preferred over unlinked ones.
  std::vector<TopologyDevice> devices = {
      {"a", 0, 0, {"d"}}, {"b", 1, 0, {}}, {"c", 2, 0, {}}, {"d", 3, 0, {}}};
  const TopologyAllocator allocator(devices);
  auto result = allocator.preferred({{"a", "b", "c", "d"}, {}, 2});
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(*result, (std::vector<std::string>{"a", "d"}));
}

TEST(TopologyAllocator, SixteenCardsFourNodesStaysOnOneNode) {
  std::vector<TopologyDevice> devices;
  for (unsigned i = 0; i < 16; ++i)
    devices.push_back({"c" + std::to_string(i), i, static_cast<int>(i / 4), {}});
  const TopologyAllocator allocator(devices);
  std::vector<std::string> available;
  for (unsigned i : {0u, 1u, 4u, 5u, 6u, 9u, 12u, 13u, 14u, 15u})
    available.push_back("c" + std::to_string(i));
  auto result = allocator.preferred({available, {}, 3});
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_EQ(*result,
            (std::vector<std::string>{"c4", "c5", "c6"}));  // best fit: node 1 has exactly 3
  auto four = allocator.preferred({available, {}, 4});
  ASSERT_TRUE(four.ok()) << four.error();
  EXPECT_EQ(*four, (std::vector<std::string>{"c12", "c13", "c14", "c15"}));
}

TEST(TopologyAllocator, ManyCardsUseTheGreedySearchAndStillAnswerWell) {
  std::vector<TopologyDevice> devices;
  std::vector<std::string> available;
  for (unsigned i = 0; i < 64; ++i) {
    TopologyDevice d{"c" + std::to_string(i), i, static_cast<int>(i / 32), {}};
    for (unsigned j = (i / 32) * 32; j < (i / 32) * 32 + 32; ++j)
      if (j != i) d.linked_ids.push_back("c" + std::to_string(j));
    devices.push_back(d);
    if (i % 32 != 3) available.push_back(d.id);  // card 3 and 35 are taken
  }
  const TopologyAllocator allocator(devices);
  const auto started = std::chrono::steady_clock::now();
  auto result = allocator.preferred({available, {"c40"}, 20});
  const auto took = std::chrono::steady_clock::now() - started;
  ASSERT_TRUE(result.ok()) << result.error();
  ASSERT_EQ(result->size(), 20u);
  std::set<std::string> unique(result->begin(), result->end());
  EXPECT_EQ(unique.size(), 20u);
  EXPECT_TRUE(unique.contains("c40"));
  for (const auto& id : *result) {
    const unsigned index = static_cast<unsigned>(std::stoul(id.substr(1)));
    EXPECT_GE(index, 32u) << id << " is on the other node than the must-include card";
    EXPECT_NE(index, 35u) << "card 35 is not available";
  }
  EXPECT_LT(took, std::chrono::seconds(2));
}

}  // namespace
}  // namespace shim
