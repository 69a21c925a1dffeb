#include "k8s-shim/poll_timeout.h"

#include <gtest/gtest.h>

namespace shim {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(PollTimeout, RoundsUpSoTheLoopNeverWakesBeforeItsDeadline) {
  const auto now = Clock::now();
  EXPECT_EQ(poll_timeout_ms(now + 1500ms, now), 1500);
  EXPECT_EQ(poll_timeout_ms(now + 1500us, now), 2);
  EXPECT_EQ(poll_timeout_ms(now + 1ns, now), 1);
  EXPECT_EQ(poll_timeout_ms(now, now), 0);
}

TEST(PollTimeout, APastDeadlineDoesNotWaitAndAFarOneFitsAnInt) {
  const auto now = Clock::now();
  EXPECT_EQ(poll_timeout_ms(now - 5s, now), 0);
  EXPECT_EQ(poll_timeout_ms(now + std::chrono::hours(24 * 365 * 100), now),
            std::numeric_limits<int>::max());
}

}  // namespace
}  // namespace shim
