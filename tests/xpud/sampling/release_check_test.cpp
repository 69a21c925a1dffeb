#include "xpud/sampling/release_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/names.h"

namespace xpud {
namespace {

using namespace std::chrono_literals;
using Clock = ReleaseCheck::Clock;

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;

ReleaseObservation seen(unsigned tenants, std::uint64_t memory_used) {
  return ReleaseObservation{true, tenants, memory_used};
}

ReleaseCheckSettings settings(std::chrono::milliseconds timeout = 30s) {
  return ReleaseCheckSettings{true, timeout, 256 * kMiB};
}

class ReleaseCheckTest : public ::testing::Test {
 protected:
  // One reading at `at` after the start.
  std::optional<std::string> read(std::chrono::milliseconds at, ReleaseObservation observation) {
    return check_.observe("u0", observation, start_ + at);
  }
  // A tenant that leaves 2 GiB behind at 1 s: the card fails at 31 s; the reason.
  std::optional<std::string> fail_the_card() {
    read(0s, seen(1, 8 * kGiB));
    read(1s, seen(0, 2 * kGiB));
    return read(31s, seen(0, 2 * kGiB));
  }

  ReleaseCheck check_{settings()};
  Clock::time_point start_ = Clock::now();
};

TEST_F(ReleaseCheckTest, MemoryBackToIdleInTimeStaysHealthy) {
  EXPECT_FALSE(read(0s, seen(1, 8 * kGiB)));
  // The process has left; its memory is on its way back.
  EXPECT_FALSE(read(1s, seen(0, 8 * kGiB)));
  EXPECT_FALSE(read(29s, seen(0, 2 * kGiB)));
  EXPECT_FALSE(read(30s, seen(0, 100 * kMiB)));
  EXPECT_FALSE(read(120s, seen(0, 100 * kMiB)));
  EXPECT_FALSE(check_.current("u0"));
}

TEST_F(ReleaseCheckTest, MemoryKeptFailsAfterTheBoundAndNotBefore) {
  EXPECT_FALSE(read(0s, seen(2, 8 * kGiB)));
  EXPECT_FALSE(read(10s, seen(0, 2 * kGiB)));  // the last process left at 10 s
  EXPECT_FALSE(read(39999ms, seen(0, 2 * kGiB)));
  auto failure = read(40s, seen(0, 2 * kGiB));
  ASSERT_TRUE(failure);
  EXPECT_EQ(*failure,
            "memory not released: 2048 MiB in use with no process 30 s after the last one left");
  EXPECT_EQ(check_.current("u0"), failure);
}

TEST_F(ReleaseCheckTest, TheReasonKeepsItsFirstTextWhileTheCardFails) {
  const auto first = fail_the_card();
  ASSERT_TRUE(first);
  // More or less memory held is the same cause: no new reason, no new signal.
  EXPECT_EQ(read(32s, seen(0, 3 * kGiB)), first);
  EXPECT_EQ(read(33s, seen(0, 1 * kGiB)), first);
}

TEST_F(ReleaseCheckTest, MemoryComingBackDownPassesAgain) {
  ASSERT_TRUE(fail_the_card());
  EXPECT_FALSE(read(32s, seen(0, 256 * kMiB)));  // at the idle level is idle
  EXPECT_FALSE(check_.current("u0"));
  // A new leak is judged afresh, from the moment it is first seen.
  EXPECT_FALSE(read(33s, seen(0, 1 * kGiB)));
  EXPECT_FALSE(read(62s, seen(0, 1 * kGiB)));
  EXPECT_TRUE(read(63s, seen(0, 1 * kGiB)));
}

TEST_F(ReleaseCheckTest, ANewProcessArrivingCancelsTheCheck) {
  read(0s, seen(1, 8 * kGiB));
  read(1s, seen(0, 8 * kGiB));
  EXPECT_FALSE(read(20s, seen(1, 8 * kGiB)));  // the next tenant, before the bound
  EXPECT_FALSE(read(40s, seen(1, 8 * kGiB)));
  EXPECT_FALSE(read(100s, seen(1, 8 * kGiB)));
  // It leaves in turn: a new wait, from then.
  EXPECT_FALSE(read(101s, seen(0, 8 * kGiB)));
  EXPECT_FALSE(read(130s, seen(0, 8 * kGiB)));
  EXPECT_TRUE(read(131s, seen(0, 8 * kGiB)));
}

TEST_F(ReleaseCheckTest, ANewcomerOnAFailedCardDoesNotClearIt) {
  const auto failure = fail_the_card();
  ASSERT_TRUE(failure);
  EXPECT_EQ(read(32s, seen(1, 4 * kGiB)), failure);
  EXPECT_EQ(read(33s, seen(0, 2 * kGiB)), failure);
  EXPECT_FALSE(read(34s, seen(0, 0)));
}

TEST_F(ReleaseCheckTest, ACardFirstSeenHoldingMemoryWithNoProcessIsCheckedToo) {
  // xpud (re)started after the crash that left the memory: the clock starts at the first look.
  EXPECT_FALSE(read(0s, seen(0, 4 * kGiB)));
  EXPECT_FALSE(read(29s, seen(0, 4 * kGiB)));
  auto failure = read(30s, seen(0, 4 * kGiB));
  ASSERT_TRUE(failure);
  EXPECT_EQ(*failure, "memory not released: 4096 MiB in use with no process for 30 s");
}

TEST_F(ReleaseCheckTest, UnknownProcessesOrMemoryJudgeNothing) {
  read(0s, seen(1, 8 * kGiB));
  read(1s, seen(0, 8 * kGiB));
  // The memory unread: the wait goes on and ends at the next reading that has it.
  EXPECT_FALSE(read(40s, ReleaseObservation{true, 0u, std::nullopt}));
  EXPECT_TRUE(read(41s, seen(0, 8 * kGiB)));

  check_.forget("u0");
  read(0s, seen(1, 8 * kGiB));
  read(1s, seen(0, 8 * kGiB));
  // The process list unread: nobody can say the card was empty throughout; the wait starts again.
  EXPECT_FALSE(read(20s, ReleaseObservation{true, std::nullopt, 8 * kGiB}));
  EXPECT_FALSE(read(21s, seen(0, 8 * kGiB)));
  EXPECT_FALSE(read(50s, seen(0, 8 * kGiB)));
  EXPECT_TRUE(read(51s, seen(0, 8 * kGiB)));
}

TEST_F(ReleaseCheckTest, DisabledJudgesNothingAndForgetsWhatItHad) {
  ASSERT_TRUE(fail_the_card());
  auto off = settings();
  off.enabled = false;
  check_.set_settings(off);
  EXPECT_FALSE(check_.current("u0"));
  EXPECT_FALSE(read(32s, seen(0, 8 * kGiB)));
  EXPECT_FALSE(read(1000s, seen(0, 8 * kGiB)));
  EXPECT_FALSE(check_.current("u0"));
}

TEST_F(ReleaseCheckTest, ANewBoundOrLevelKeepsWhatWasJudged) {
  const auto failure = fail_the_card();
  ASSERT_TRUE(failure);
  check_.set_settings(settings(60s));  // a reload: no flap to Healthy and back
  EXPECT_EQ(check_.current("u0"), failure);
  EXPECT_EQ(read(32s, seen(0, 2 * kGiB)), failure);
  // A level the memory is now under passes at the next reading.
  auto roomier = settings(60s);
  roomier.idle_memory_bytes = 4 * kGiB;
  check_.set_settings(roomier);
  EXPECT_FALSE(read(33s, seen(0, 2 * kGiB)));
  // A wait under way takes the new bound.
  check_.observe("u1", seen(1, 8 * kGiB), start_);
  check_.observe("u1", seen(0, 8 * kGiB), start_ + 1s);
  EXPECT_FALSE(check_.observe("u1", seen(0, 8 * kGiB), start_ + 31s));
  EXPECT_TRUE(check_.observe("u1", seen(0, 8 * kGiB), start_ + 61s));
}

TEST_F(ReleaseCheckTest, ACardNotJudgedNeverFails) {
  const ReleaseObservation sriov_pf{false, 0u, 8 * kGiB};
  EXPECT_FALSE(read(0s, sriov_pf));
  EXPECT_FALSE(read(1000s, sriov_pf));
}

TEST_F(ReleaseCheckTest, AZeroBoundFailsAtTheFirstReadingAndAnOddOneIsShownInMilliseconds) {
  check_.set_settings(settings(0ms));
  read(0s, seen(1, 8 * kGiB));
  EXPECT_TRUE(read(1s, seen(0, 8 * kGiB)));
  check_.set_settings(settings(1500ms));
  check_.forget("u0");
  read(0s, seen(1, 8 * kGiB));
  read(1s, seen(0, 8 * kGiB));
  EXPECT_EQ(read(2500ms, seen(0, 8 * kGiB)),
            "memory not released: 8192 MiB in use with no process 1500 ms after the last one left");
}

TEST_F(ReleaseCheckTest, CardsAreJudgedApart) {
  check_.observe("u0", seen(1, 8 * kGiB), start_);
  check_.observe("u1", seen(1, 8 * kGiB), start_);
  check_.observe("u0", seen(0, 8 * kGiB), start_ + 1s);
  check_.observe("u1", seen(1, 8 * kGiB), start_ + 1s);
  EXPECT_TRUE(check_.observe("u0", seen(0, 8 * kGiB), start_ + 31s));
  EXPECT_FALSE(check_.observe("u1", seen(1, 8 * kGiB), start_ + 31s));
}

TEST(ReleaseObservation, TheProcessListWithoutXpudItselfIsTheTenants) {
  DeviceIdentity card;
  DeviceReading reading;
  reading.metrics[std::string(xpu::names::metric::kMemoryUsed)] = 3.0 * kGiB;
  reading.metrics[std::string(xpu::names::metric::kProcessCount)] = 2;
  reading.processes = std::vector<ProcessUsage>{{4242, 2 * kGiB}, {777, 0}};
  auto observed = release_observation(card, reading, 777);
  EXPECT_TRUE(observed.judged);
  EXPECT_EQ(observed.tenants, 1u);
  EXPECT_EQ(observed.memory_used_bytes, 3 * kGiB);
  // xpud alone on the card, as the vendor's sample shows the reading process: nobody.
  reading.processes = std::vector<ProcessUsage>{{777, 0}};
  EXPECT_EQ(release_observation(card, reading, 777).tenants, 0u);
}

TEST(ReleaseObservation, WithoutAListTheCountMetricTellsAndGarbageIsUnknown) {
  DeviceIdentity card;
  DeviceReading reading;
  EXPECT_FALSE(release_observation(card, reading, 1).tenants);
  EXPECT_FALSE(release_observation(card, reading, 1).memory_used_bytes);
  const std::string count(xpu::names::metric::kProcessCount);
  const std::string used(xpu::names::metric::kMemoryUsed);
  reading.metrics[count] = 0;
  EXPECT_EQ(release_observation(card, reading, 1).tenants, 0u);
  reading.metrics[count] = 0.5;  // a pinned oddity is somebody, never nobody
  EXPECT_EQ(release_observation(card, reading, 1).tenants, 1u);
  reading.metrics[count] = 3;
  EXPECT_EQ(release_observation(card, reading, 1).tenants, 3u);
  for (double bad : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    reading.metrics[count] = bad;
    reading.metrics[used] = bad;
    EXPECT_FALSE(release_observation(card, reading, 1).tenants) << bad;
    EXPECT_FALSE(release_observation(card, reading, 1).memory_used_bytes) << bad;
  }
  reading.metrics[used] = 1e300;  // far past any card: held, not wrapped to a small number
  EXPECT_EQ(*release_observation(card, reading, 1).memory_used_bytes, 1ull << 62);
}

TEST(ReleaseObservation, APhysicalFunctionWithSriovOnIsNotJudged) {
  DeviceIdentity pf;
  pf.sriov_enabled = true;
  EXPECT_FALSE(release_observation(pf, DeviceReading{}, 1).judged);
}

TEST(ReleaseVerdict, TheMonitorsCauseWinsAndTheCheckAddsItsOwn) {
  HealthState faulty{false, "driver reports state ERROR (207)",
                     xpu::names::reason_kind::kDriverFault, 0};
  auto kept = with_release_verdict(faulty, std::string("memory not released: ..."));
  EXPECT_EQ(kept.reason, faulty.reason);
  EXPECT_EQ(kept.reason_kind, "driver_fault");

  auto released = with_release_verdict(HealthState{}, std::nullopt);
  EXPECT_TRUE(released.healthy);
  auto held = with_release_verdict(HealthState{}, std::string("memory not released: 1 MiB"));
  EXPECT_FALSE(held.healthy);
  EXPECT_EQ(held.reason, "memory not released: 1 MiB");
  EXPECT_EQ(held.reason_kind, "memory_not_released");
}

}  // namespace
}  // namespace xpud
