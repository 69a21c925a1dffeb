#include "k8s-shim/exporter/single_flight.h"

#include <chrono>
#include <condition_variable>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace shim::exporter {
namespace {

using namespace std::chrono_literals;

// A call that blocks until the test opens the gate, so the test controls what overlaps.
struct GatedCall {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  int started = 0;

  int operator()() {
    std::unique_lock lock(mutex);
    int number = ++started;
    changed.notify_all();
    changed.wait(lock, [this] { return open; });
    return number;
  }
  bool wait_started(int count) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, 5s, [&] { return started >= count; });
  }
  void release() {
    std::lock_guard lock(mutex);
    open = true;
    changed.notify_all();
  }
};

TEST(SingleFlight, ConcurrentCallersShareTheCallInFlight) {
  GatedCall gate;
  SingleFlight<int> flight([&gate] { return gate(); });

  std::vector<int> results(4);
  std::thread leader([&] { results[0] = flight.run(); });
  ASSERT_TRUE(gate.wait_started(1));
  std::vector<std::thread> followers;
  for (int i = 1; i < 4; ++i)
    followers.emplace_back([&, i] { results[static_cast<size_t>(i)] = flight.run(); });
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (flight.joined() < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  EXPECT_EQ(flight.joined(), 3u);
  gate.release();
  leader.join();
  for (auto& follower : followers) follower.join();

  EXPECT_EQ(gate.started, 1);
  EXPECT_EQ(results, (std::vector<int>{1, 1, 1, 1}));
}

TEST(SingleFlight, NextCallAfterOneFinishedRunsAgain) {
  int calls = 0;
  SingleFlight<int> flight([&calls] { return ++calls; });
  EXPECT_EQ(flight.run(), 1);
  EXPECT_EQ(flight.run(), 2);
}

TEST(SingleFlight, ResultIsSharedForTheReuseWindowFromItsCallsStart) {
  auto now = std::chrono::steady_clock::time_point{};
  int calls = 0;
  SingleFlight<int> flight(
      [&] {
        now += 500ms;  // the call takes half a second (a hung xpud's timeout)
        return ++calls;
      },
      1000ms, [&] { return now; });
  EXPECT_EQ(flight.run(), 1);  // started at 0, done at 500 ms
  EXPECT_EQ(flight.run(), 1);  // at 500 ms: within a second of the call's start
  now += 499ms;
  EXPECT_EQ(flight.run(), 1);  // at 999 ms
  now += 1ms;
  EXPECT_EQ(flight.run(), 2);  // at 1 s: a new call
  EXPECT_EQ(flight.joined(), 2u);
}

TEST(SingleFlight, ExceptionReachesTheCallerAndDoesNotWedgeLaterCalls) {
  bool fail = true;
  SingleFlight<int> flight([&fail]() -> int {
    if (fail) throw std::runtime_error("boom");
    return 7;
  });
  EXPECT_THROW(flight.run(), std::runtime_error);
  fail = false;
  EXPECT_EQ(flight.run(), 7);
}

}  // namespace
}  // namespace shim::exporter
