// The hourly allowance of resets per card: a sliding window, each card its own.
#include "xpud/recovery/reset_budget.h"

#include <gtest/gtest.h>

namespace xpud {
namespace {

using namespace std::chrono_literals;
using Clock = ResetBudget::Clock;

TEST(ResetBudget, AllowsTheLimitWithinAnyHourThenSaysWhenTheNextMayBe) {
  ResetBudget budget(3);
  const Clock::time_point t0{};
  for (auto at : {t0, t0 + 10min, t0 + 20min}) {
    EXPECT_FALSE(budget.next_allowed("a", at));
    budget.spend("a", at);
  }
  EXPECT_EQ(budget.next_allowed("a", t0 + 30min), t0 + 1h);
  // The window slides: the first reset leaves it an hour after it was made.
  EXPECT_EQ(budget.next_allowed("a", t0 + 1h - 1ms), t0 + 1h);
  EXPECT_FALSE(budget.next_allowed("a", t0 + 1h));
  budget.spend("a", t0 + 1h);
  EXPECT_EQ(budget.next_allowed("a", t0 + 1h + 1s), t0 + 10min + 1h);
}

TEST(ResetBudget, OneCardUsingItsResetsLeavesTheOthersTheirs) {
  ResetBudget budget(1);
  const Clock::time_point t0{};
  budget.spend("a", t0);
  EXPECT_TRUE(budget.next_allowed("a", t0 + 1s));
  EXPECT_FALSE(budget.next_allowed("b", t0 + 1s));
}

TEST(ResetBudget, ARefundedResetDoesNotCountAndALowerLimitAppliesAtOnce) {
  ResetBudget budget(2);
  const Clock::time_point t0{};
  budget.spend("a", t0);
  budget.spend("a", t0 + 1s);
  EXPECT_TRUE(budget.next_allowed("a", t0 + 2s));
  budget.refund("a", t0 + 1s);
  EXPECT_FALSE(budget.next_allowed("a", t0 + 2s));
  budget.set_limit(1);
  EXPECT_EQ(budget.next_allowed("a", t0 + 2s), t0 + 1h);
  budget.forget("a");
  EXPECT_FALSE(budget.next_allowed("a", t0 + 2s));
}

}  // namespace
}  // namespace xpud
