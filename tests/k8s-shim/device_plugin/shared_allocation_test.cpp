#include "k8s-shim/device_plugin/shared_allocation.h"

#include <gtest/gtest.h>

namespace shim {
namespace {

// Cards 0, 1, 2 with four replicas each.
ResourceState three_shared_cards() {
  ResourceState state{"kunlunxin.com/xpu-shared", "kunlunxin-xpu-shared.sock", {}, true};
  for (unsigned i = 0; i < 3; ++i)
    for (unsigned r = 0; r < 4; ++r) {
      PluginDevice d;
      d.card_id = "uuid-" + std::to_string(i);
      d.id = d.card_id + "::" + std::to_string(r);
      d.index = i;
      d.replica = r;
      d.healthy = true;
      state.devices.push_back(d);
    }
  return state;
}

std::vector<std::string> all_ids(const ResourceState& state) {
  std::vector<std::string> ids;
  for (const auto& d : state.devices) ids.push_back(d.id);
  return ids;
}

using Ids = std::vector<std::string>;

TEST(SharedAllocation, SpreadsOverDistinctCards) {
  const auto state = three_shared_cards();
  auto chosen = preferred_shared_allocation(state, {all_ids(state), {}, 3});
  ASSERT_TRUE(chosen.ok()) << chosen.error();
  EXPECT_EQ(*chosen, (Ids{"uuid-0::0", "uuid-1::0", "uuid-2::0"}));

  // Four replicas on three cards: one card twice, the others once.
  auto four = preferred_shared_allocation(state, {all_ids(state), {}, 4});
  ASSERT_TRUE(four.ok()) << four.error();
  EXPECT_EQ(*four, (Ids{"uuid-0::0", "uuid-0::1", "uuid-1::0", "uuid-2::0"}));
}

TEST(SharedAllocation, PrefersTheLeastLoadedCardAndKeepsMustInclude) {
  const auto state = three_shared_cards();
  // Card 0 has one replica left, card 1 two, card 2 four: the least loaded goes first.
  Ids available = {"uuid-2::3", "uuid-0::3", "uuid-1::2", "uuid-1::3",
                   "uuid-2::0", "uuid-2::1", "uuid-2::2"};
  auto one = preferred_shared_allocation(state, {available, {}, 1});
  ASSERT_TRUE(one.ok()) << one.error();
  EXPECT_EQ(*one, Ids{"uuid-2::0"});

  auto with_must = preferred_shared_allocation(state, {available, {"uuid-2::3"}, 2});
  ASSERT_TRUE(with_must.ok()) << with_must.error();
  EXPECT_EQ(*with_must, (Ids{"uuid-1::2", "uuid-2::3"}));  // card 2 is used already: card 1 next

  // The request's order does not matter.
  Ids reversed(available.rbegin(), available.rend());
  auto again = preferred_shared_allocation(state, {reversed, {"uuid-2::3"}, 2});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *with_must);
}

TEST(SharedAllocation, UnknownIdsOnlyWhenNothingElseIsLeft) {
  const auto state = three_shared_cards();
  auto chosen = preferred_shared_allocation(state, {{"gone::0", "uuid-1::1"}, {}, 1});
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(*chosen, Ids{"uuid-1::1"});
  auto both = preferred_shared_allocation(state, {{"gone::0", "uuid-1::1"}, {}, 2});
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(*both, (Ids{"uuid-1::1", "gone::0"}));
}

TEST(SharedAllocation, BadRequestsAreRejected) {
  const auto state = three_shared_cards();
  auto zero = preferred_shared_allocation(state, {all_ids(state), {}, 0});
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error(), "allocation size 0 is not positive");
  auto big = preferred_shared_allocation(state, {{"uuid-0::0"}, {}, 2});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error(), "allocation size 2 exceeds the 1 available devices");
  auto missing = preferred_shared_allocation(state, {{"uuid-0::0"}, {"uuid-0::1"}, 1});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(), "must-include device 'uuid-0::1' is not among the available devices");
  auto too_many = preferred_shared_allocation(
      state, {{"uuid-0::0", "uuid-0::1"}, {"uuid-0::0", "uuid-0::1"}, 1});
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.error(), "must-include lists 2 devices, more than the allocation size 1");
}

}  // namespace
}  // namespace shim
