#include "k8s-shim/device_plugin/memory_share_allocation.h"

#include <gtest/gtest.h>

#include "tests/support/resource_state_builder.h"

namespace shim {
namespace {

using Ids = std::vector<std::string>;

// Cards 0, 2, 5 with 8, 16, 4 units of 1 GiB.
ResourceState three_cards() {
  return xpu::test::memory_unit_cards({0, 2, 5}, {8, 16, 4});
}

Ids all_ids(const ResourceState& state) {
  Ids ids;
  for (const auto& d : state.devices) ids.push_back(d.id);
  return ids;
}

Ids units(unsigned card, std::vector<unsigned> numbers) {
  Ids ids;
  for (unsigned k : numbers)
    ids.push_back("uuid-" + std::to_string(card) + "::m" + std::to_string(k));
  return ids;
}

Ids operator+(Ids a, const Ids& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(MemoryShareAllocation, TakesEveryUnitFromTheCardThatFitsBest) {
  const auto state = three_cards();
  auto small = preferred_memory_allocation(state, {all_ids(state), {}, 3});
  ASSERT_TRUE(small.ok()) << small.error();
  EXPECT_EQ(*small, units(5, {0, 1, 2}));  // card 5 has the fewest units that still hold 3

  auto medium = preferred_memory_allocation(state, {all_ids(state), {}, 5});
  ASSERT_TRUE(medium.ok()) << medium.error();
  EXPECT_EQ(*medium, units(0, {0, 1, 2, 3, 4}));

  auto large = preferred_memory_allocation(state, {all_ids(state), {}, 16});
  ASSERT_TRUE(large.ok()) << large.error();
  EXPECT_EQ(*large, units(2, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}));
}

TEST(MemoryShareAllocation, CountsOnlyAvailableUnitsAndBreaksTiesByCardIndex) {
  const auto state = three_cards();
  // Card 0 has 3 units left, card 2 has 3, card 5 has 4: a tie between 0 and 2 goes to 0.
  const Ids available = units(2, {13, 14, 15}) + units(5, {0, 1, 2, 3}) + units(0, {7, 2, 5});
  auto chosen = preferred_memory_allocation(state, {available, {}, 2});
  ASSERT_TRUE(chosen.ok()) << chosen.error();
  EXPECT_EQ(*chosen, units(0, {2, 5}));

  // Four units: only card 5 holds them.
  auto four = preferred_memory_allocation(state, {available, {}, 4});
  ASSERT_TRUE(four.ok()) << four.error();
  EXPECT_EQ(*four, units(5, {0, 1, 2, 3}));

  // The request's order does not matter.
  const Ids reversed(available.rbegin(), available.rend());
  auto again = preferred_memory_allocation(state, {reversed, {}, 2});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *chosen);
}

TEST(MemoryShareAllocation, MustIncludeUnitsOnOneCardPinThatCard) {
  const auto state = three_cards();
  // Card 5 would fit best, but the must-include unit is on card 2.
  auto chosen = preferred_memory_allocation(state, {all_ids(state), units(2, {9}), 3});
  ASSERT_TRUE(chosen.ok()) << chosen.error();
  EXPECT_EQ(*chosen, units(2, {0, 1, 9}));

  auto only_must = preferred_memory_allocation(state, {all_ids(state), units(0, {3, 4}), 2});
  ASSERT_TRUE(only_must.ok()) << only_must.error();
  EXPECT_EQ(*only_must, units(0, {3, 4}));
}

TEST(MemoryShareAllocation, FallsBackToCardOrderWhenNoSingleCardHoldsTheRequest) {
  const auto state = three_cards();
  // 20 units: no card has them; must-include first, then the rest in card order.
  auto big = preferred_memory_allocation(state, {all_ids(state), {}, 20});
  ASSERT_TRUE(big.ok()) << big.error();
  EXPECT_EQ(*big,
            units(0, {0, 1, 2, 3, 4, 5, 6, 7}) + units(2, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));

  // Must-include units on two cards: kept, and the rest in card order.
  auto spread =
      preferred_memory_allocation(state, {all_ids(state), units(5, {3}) + units(2, {1}), 4});
  ASSERT_TRUE(spread.ok()) << spread.error();
  EXPECT_EQ(*spread, units(0, {0, 1}) + units(2, {1}) + units(5, {3}));

  // A must-include card that cannot hold the request (card 5 has 4 units): fall back likewise.
  auto pinned = preferred_memory_allocation(state, {all_ids(state), units(5, {0}), 6});
  ASSERT_TRUE(pinned.ok()) << pinned.error();
  EXPECT_EQ(*pinned, units(0, {0, 1, 2, 3, 4}) + units(5, {0}));
}

TEST(MemoryShareAllocation, UnknownIdsOnlyWhenNothingElseIsLeft) {
  const auto state = three_cards();
  const Ids available = {"gone::m0", "uuid-5::m1", "uuid-5::m2"};
  auto two = preferred_memory_allocation(state, {available, {}, 2});
  ASSERT_TRUE(two.ok()) << two.error();
  EXPECT_EQ(*two, units(5, {1, 2}));
  auto three = preferred_memory_allocation(state, {available, {}, 3});
  ASSERT_TRUE(three.ok()) << three.error();
  EXPECT_EQ(*three, units(5, {1, 2}) + Ids{"gone::m0"});
  // A must-include ID the plugin does not know: kept, and no card is pinned.
  auto must_unknown = preferred_memory_allocation(state, {available, {"gone::m0"}, 2});
  ASSERT_TRUE(must_unknown.ok()) << must_unknown.error();
  EXPECT_EQ(*must_unknown, units(5, {1}) + Ids{"gone::m0"});
}

TEST(MemoryShareAllocation, RepeatedIdsCountOnceAndBadRequestsAreRejected) {
  const auto state = three_cards();
  const Ids repeated = units(5, {0, 0, 1}) + units(0, {0, 1, 2});
  auto chosen = preferred_memory_allocation(state, {repeated, {}, 3});
  ASSERT_TRUE(chosen.ok()) << chosen.error();
  EXPECT_EQ(*chosen, units(0, {0, 1, 2}));  // card 5 has two distinct units, not three

  auto zero = preferred_memory_allocation(state, {all_ids(state), {}, 0});
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error(), "allocation size 0 is not positive");
  auto big = preferred_memory_allocation(state, {units(0, {0}), {}, 2});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error(), "allocation size 2 exceeds the 1 available devices");
  auto missing = preferred_memory_allocation(state, {units(0, {0}), units(0, {1}), 1});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(), "must-include device 'uuid-0::m1' is not among the available devices");
}

}  // namespace
}  // namespace shim
