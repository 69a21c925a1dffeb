// How the proxy shares its connections and its outstanding calls among uids: each uid but root has
// a cap, and the others together never reach root's share.
#include "xpud-api-proxy/uid_budget.h"

#include <gtest/gtest.h>

namespace {

using xpu::api_proxy::BudgetLimits;
using xpu::api_proxy::UidBudget;

TEST(UidBudget, OneUidStopsAtItsOwnCap) {
  UidBudget budget(BudgetLimits{.total = 128, .per_uid = 16, .reserved_for_root = 32},
                   "connections");
  for (int i = 0; i < 16; ++i) ASSERT_FALSE(budget.take(65534)) << i;
  const auto refused = budget.take(65534);
  ASSERT_TRUE(refused);
  EXPECT_EQ(*refused, "uid 65534 holds 16 connections already, its limit");
  EXPECT_EQ(budget.in_use_by(65534), 16u);
  // Another uid is not affected, nor is root.
  EXPECT_FALSE(budget.take(1000));
  EXPECT_FALSE(budget.take(0));
  // A connection given back makes room for the same uid again.
  budget.give_back(65534);
  EXPECT_FALSE(budget.take(65534));
}

TEST(UidBudget, ManyUidsTogetherLeaveRootItsShare) {
  UidBudget budget(BudgetLimits{.total = 8, .per_uid = 4, .reserved_for_root = 2}, "connections");
  for (uid_t uid = 1000; uid < 1006; ++uid) ASSERT_FALSE(budget.take(uid)) << uid;
  const auto refused = budget.take(1006);
  ASSERT_TRUE(refused);
  EXPECT_EQ(*refused,
            "the 6 connections open to uids other than 0 are in use (2 are kept for root)");
  EXPECT_FALSE(budget.take(0));
  EXPECT_FALSE(budget.take(0));
  EXPECT_EQ(*budget.take(0), "all 8 connections are in use");
  EXPECT_EQ(budget.in_use(), 8u);
  EXPECT_EQ(budget.in_use_by(0), 2u);
}

TEST(UidBudget, RootMayUseEverySlotButIsCountedInTheTotal) {
  UidBudget budget(BudgetLimits{.total = 4, .per_uid = 1, .reserved_for_root = 1}, "calls");
  for (int i = 0; i < 4; ++i) ASSERT_FALSE(budget.take(0));
  EXPECT_TRUE(budget.take(0));
  EXPECT_EQ(*budget.take(1000), "all 4 calls are in use");
}

TEST(UidBudget, AnUnknownPeerCountsAsOneMoreUidOtherThanRoot) {
  UidBudget budget(BudgetLimits{.total = 8, .per_uid = 2, .reserved_for_root = 4}, "connections");
  EXPECT_FALSE(budget.take(std::nullopt));
  EXPECT_FALSE(budget.take(std::nullopt));
  EXPECT_EQ(*budget.take(std::nullopt), "uid unknown holds 2 connections already, its limit");
  EXPECT_EQ(budget.in_use_by(0), 0u);
}

TEST(UidBudget, GivingBackWhatWasNeverTakenChangesNothing) {
  UidBudget budget(BudgetLimits{.total = 2, .per_uid = 1, .reserved_for_root = 0}, "connections");
  budget.give_back(1000);
  budget.give_back(0);
  EXPECT_EQ(budget.in_use(), 0u);
  ASSERT_FALSE(budget.take(1000));
  budget.give_back(0);  // root holds none: uid 1000's stays counted
  EXPECT_EQ(budget.in_use(), 1u);
  EXPECT_EQ(budget.in_use_by(1000), 1u);
}

TEST(UidBudget, AReserveLargerThanTheTotalLeavesNothingToOthers) {
  UidBudget budget(BudgetLimits{.total = 2, .per_uid = 1, .reserved_for_root = 5}, "connections");
  EXPECT_TRUE(budget.take(1000));
  EXPECT_FALSE(budget.take(0));
}

}  // namespace
