// The driver-stall rules on their own: cards keep their health within the grace, turn Unhealthy
// "driver stalled" past it, and the stall ends when the call returns.
#include "xpud/sampling/driver_stall.h"

#include <gtest/gtest.h>

namespace xpud {
namespace {

using namespace std::chrono_literals;
using Clock = DriverStall::Clock;

HealthState healthy() {
  return {};
}
HealthState faulty() {
  return {false, "driver reports state ERROR (207)", "driver_fault", 0};
}

TEST(DriverStall, NoStuckCallIsNoStall) {
  DriverStall stall(1000ms);
  const auto t0 = Clock::now();
  stall.observe("", t0);
  EXPECT_FALSE(stall.stalled());
  EXPECT_EQ(stall.card_health(healthy(), t0 + 1h).healthy, true);
}

TEST(DriverStall, WithinTheGraceCardsKeepTheirLastHealth) {
  DriverStall stall(1000ms);
  const auto t0 = Clock::now();
  stall.observe("read xpu3", t0);
  ASSERT_TRUE(stall.stalled());
  stall.observe("read xpu3", t0 + 1000ms);
  EXPECT_FALSE(stall.past_grace(t0 + 1000ms));
  EXPECT_TRUE(stall.card_health(healthy(), t0 + 1000ms).healthy);
  const HealthState kept = stall.card_health(faulty(), t0 + 1000ms);
  EXPECT_FALSE(kept.healthy);
  EXPECT_EQ(kept.reason, "driver reports state ERROR (207)");
}

TEST(DriverStall, PastTheGraceEveryCardIsUnhealthyDriverStalled) {
  DriverStall stall(1000ms);
  const auto t0 = Clock::now();
  stall.observe("read xpu3", t0);
  stall.observe("read xpu3", t0 + 1001ms);
  EXPECT_TRUE(stall.past_grace(t0 + 1001ms));
  for (const HealthState& last : {healthy(), faulty()}) {
    const HealthState now = stall.card_health(last, t0 + 1001ms);
    EXPECT_FALSE(now.healthy);
    EXPECT_EQ(now.reason, "driver stalled");
    EXPECT_EQ(now.reason_kind, "driver_stalled");
  }
}

TEST(DriverStall, TheStallIsTimedFromItsFirstSightAndEndsWhenTheCallReturns) {
  DriverStall stall(1000ms);
  const auto t0 = Clock::now();
  stall.observe("read xpu3", t0);
  stall.observe("read xpu3", t0 + 600ms);
  EXPECT_EQ(stall.duration(t0 + 600ms), 600ms);
  stall.observe("", t0 + 700ms);
  EXPECT_FALSE(stall.stalled());
  EXPECT_EQ(stall.duration(t0 + 700ms), 0ms);
  // A new hang starts a new grace: the earlier 700 ms do not count.
  stall.observe("read xpu0", t0 + 800ms);
  EXPECT_FALSE(stall.past_grace(t0 + 1700ms));
  EXPECT_TRUE(stall.past_grace(t0 + 1801ms));
}

TEST(DriverStall, AZeroGraceMarksCardsAtOnce) {
  DriverStall stall(0ms);
  const auto t0 = Clock::now();
  stall.observe("discover devices", t0);
  EXPECT_FALSE(stall.card_health(healthy(), t0 + 1ms).healthy);
}

}  // namespace
}  // namespace xpud
