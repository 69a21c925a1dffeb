// Discovery runs at start, on a device event, when a read says a card is gone and on the safety
// rescan, not every cycle: counted as library calls on an idle 8-card host (the sampler on the
// xpuml backend against the fake libxpuml, which counts every call).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>

#include "tests/support/wait.h"
#include "tests/xpud/backends/xpuml/fake_xpuml_host.h"
#include "xpud/backends/xpuml/xpuml_backend.h"
#include "xpud/sampling/sampler.h"

namespace xpud {
namespace {

using namespace std::chrono_literals;

// One discovery asks the library for the device count once.
constexpr const char* kDiscoveryCall = "xpumlDeviceGetCount";

class IdleLibraryCalls : public ::testing::Test {
 protected:
  IdleLibraryCalls() { host.write_scenario("devices 8\n"); }
  // A read that overran its time box is abandoned by the sampler's destructor and may return
  // after this binary's exit() has destroyed spdlog's registry, then log into freed memory as it
  // releases the library (ThreadSanitizer caught it). xpud itself leaves with _Exit then
  // (daemon.cpp); here the test waits for the driver thread instead.
  ~IdleLibraryCalls() override {
    if (!sampler) return;
    sampler->stop();
    EXPECT_TRUE(xpu::test::wait_until([&] { return !sampler->driver_stuck(); }, 60s))
        << "a library call has not returned";
  }

  void start(std::chrono::milliseconds rescan_interval,
             std::chrono::milliseconds interval = 100ms) {
    auto backend = make_xpuml_backend(test::fake_xpuml_library(), host.sysfs_root());
    ASSERT_TRUE(backend.ok()) << backend.error();
    SamplerSettings settings;
    settings.interval = interval;
    settings.rescan_interval = rescan_interval;
    // These tests count calls, not time boxes: a read slowed past the default 2 s by a loaded
    // machine or ThreadSanitizer must not turn into a driver stall that skips reads.
    settings.call_timeout = 30s;
    sampler = std::make_unique<Sampler>(std::move(*backend), settings, [this] { ++cycles; });
    sampler->start();
    ASSERT_TRUE(xpu::test::wait_until([&] { return cycles >= 1; })) << "no first cycle";
  }

  // Since the test began: the library, and its counts, outlive each test (-z nodelete).
  unsigned discoveries() const { return calls.count(kDiscoveryCall) - discoveries_before_test; }
  std::size_t devices() const {
    auto snapshot = sampler->latest();
    return snapshot ? snapshot->devices.size() : 0;
  }
  bool wait_cycles(unsigned n) {
    const unsigned target = cycles + n;
    return xpu::test::wait_until([&] { return cycles >= target; }, 30s);
  }

  // Library calls in 60 cycles: one minute at the default interval_ms = 1000.
  std::pair<unsigned, unsigned> minute_of_calls() {
    const unsigned calls_before = calls.count(nullptr), discoveries_before = discoveries();
    EXPECT_TRUE(wait_cycles(60));
    return {calls.count(nullptr) - calls_before, discoveries() - discoveries_before};
  }

  test::FakeXpumlHost host;
  test::FakeXpumlCalls calls{test::fake_xpuml_library()};
  const unsigned discoveries_before_test = calls.count(kDiscoveryCall);
  std::atomic<unsigned> cycles{0};
  std::unique_ptr<Sampler> sampler;
};

TEST_F(IdleLibraryCalls, AnIdleHostDiscoversOnlyAtStart) {
  start(3600s);
  EXPECT_EQ(discoveries(), 1u);
  ASSERT_TRUE(wait_cycles(20));
  EXPECT_EQ(discoveries(), 1u) << "20 cycles without an event or a rescan rediscovered";
  EXPECT_EQ(devices(), 8u);
}

TEST_F(IdleLibraryCalls, ADeviceEventDiscoversOnceAndFindsTheNewCard) {
  start(3600s);
  host.write_scenario("devices 9\n");
  ASSERT_TRUE(wait_cycles(3));
  EXPECT_EQ(devices(), 8u) << "a card was found without an event";
  sampler->request_discovery();
  ASSERT_TRUE(xpu::test::wait_until([&] { return devices() == 9; }, 5s));
  EXPECT_EQ(discoveries(), 2u);
  ASSERT_TRUE(wait_cycles(5));
  EXPECT_EQ(discoveries(), 2u);
}

TEST_F(IdleLibraryCalls, ALostCardTriggersOneDiscovery) {
  start(3600s);
  host.write_scenario("devices 8\ndevice 3\nlost\n");
  ASSERT_TRUE(xpu::test::wait_until([&] { return discoveries() == 2; }, 5s))
      << "a read that says the card is lost did not trigger a discovery";
  // The lost card keeps failing; it does not bring back a discovery per cycle.
  ASSERT_TRUE(wait_cycles(10));
  EXPECT_EQ(discoveries(), 2u);
}

TEST_F(IdleLibraryCalls, TheRescanRunsOnItsOwnInterval) {
  start(1000ms);
  ASSERT_TRUE(xpu::test::wait_until([&] { return discoveries() >= 3; }, 10s));
  // 100 ms cycles, a rescan every 1000 ms: about one discovery per ten cycles.
  EXPECT_GE(cycles.load(), 3 * discoveries())
      << cycles << " cycles, " << discoveries() << " discoveries";
}

// Figures for the closing note: library calls per minute on an idle 8-card host at the
// default interval (60 cycles) and rescan (one per 60 cycles), against discovery on every cycle
// as xpud did before (a rescan interval of 0).
TEST_F(IdleLibraryCalls, FiguresPerMinute) {
  // Time scaled down 50 times: 20 ms cycles, a rescan every 60 of them.
  start(0ms, 20ms);
  auto [every_cycle, every_cycle_discoveries] = minute_of_calls();
  sampler.reset();
  cycles = 0;
  start(1200ms, 20ms);
  auto [evented, evented_discoveries] = minute_of_calls();
  std::printf(
      "library calls per minute, idle 8-card host: discovery every cycle %u (%u discoveries), "
      "on events + 60 s rescan %u (%u discoveries)\n",
      every_cycle, every_cycle_discoveries, evented, evented_discoveries);
  EXPECT_LE(evented_discoveries, 2u);
  EXPECT_LT(evented, every_cycle);
}

}  // namespace
}  // namespace xpud
