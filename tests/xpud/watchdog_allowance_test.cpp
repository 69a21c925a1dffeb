// The watchdog allowance grows with the card count, so a slow-but-alive driver (every call just
// under call_timeout_ms) never gets xpud killed.
#include "xpud/watchdog_allowance.h"

#include <gtest/gtest.h>

namespace xpud {
namespace {

using namespace std::chrono_literals;

TEST(WatchdogAllowance, IsIntervalPlusOneTimeoutPerCallOfACyclePlusTheMargin) {
  // Defaults, 8 cards: 1 s + (8 + 1) x 2 s + 5 s.
  EXPECT_EQ(watchdog_allowance(1000ms, 2000ms, 8), 24000ms);
  EXPECT_EQ(watchdog_allowance(1000ms, 2000ms, 0), 8000ms);
  EXPECT_EQ(watchdog_allowance(100ms, 300ms, 2), 100ms + 900ms + kWatchdogMargin);
}

TEST(WatchdogAllowance, CoversTheSlowestCycleThatStillCompletes) {
  for (unsigned cards : {0u, 1u, 8u, 16u, 64u}) {
    const auto interval = 1000ms;
    const auto call_timeout = 2000ms;
    // One discovery and one read per card, each just under the timeout, then the interval.
    const auto slowest_cycle = interval + (cards + 1) * (call_timeout - 1ms);
    EXPECT_GT(watchdog_allowance(interval, call_timeout, cards), slowest_cycle)
        << cards << " cards";
  }
}

TEST(WatchdogAllowance, HoldsTheLargestConfigurableValuesWithoutOverflow) {
  // interval_ms <= 3600000, call_timeout_ms <= 60000, and a discovery caps at 4096 cards.
  EXPECT_EQ(watchdog_allowance(3600000ms, 60000ms, 4096),
            3600000ms + 4097 * 60000ms + kWatchdogMargin);
}

}  // namespace
}  // namespace xpud
