#include "xpud/time_boxed_executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <stdexcept>

namespace xpud {
namespace {

using namespace std::chrono_literals;

TEST(TimeBoxedExecutor, ReturnsTheValue) {
  TimeBoxedExecutor executor(1000ms);
  auto result = executor.call("answer", [] { return 42; });
  ASSERT_TRUE(result) << result.error();
  EXPECT_EQ(*result, 42);
}

TEST(TimeBoxedExecutor, SlowCallTimesOutAndBlocksNothingElse) {
  TimeBoxedExecutor executor(50ms);
  std::promise<void> release;
  auto released = release.get_future().share();
  auto result = executor.call("read xpu3", [released] {
    released.wait();
    return 1;
  });
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error(), "'read xpu3' timed out after 50 ms");
  EXPECT_TRUE(executor.stuck());

  // While the driver is still inside the call, others fail fast instead of queueing.
  auto started = std::chrono::steady_clock::now();
  auto busy = executor.call("read xpu4", [] { return 2; });
  ASSERT_FALSE(busy);
  EXPECT_NE(busy.error().find("driver busy: 'read xpu3' has not returned after"),
            std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 40ms);

  release.set_value();
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (executor.stuck() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  auto again = executor.call("read xpu4", [] { return 3; });
  ASSERT_TRUE(again) << again.error();
  EXPECT_EQ(*again, 3);
}

TEST(TimeBoxedExecutor, ExceptionsBecomeErrors) {
  TimeBoxedExecutor executor(1000ms);
  auto result =
      executor.call("discover devices", []() -> int { throw std::runtime_error("boom"); });
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error(), "'discover devices' failed: boom");
  EXPECT_TRUE(executor.call("next", [] { return true; }));
}

TEST(TimeBoxedExecutor, DestructionWithAHungCallDoesNotHang) {
  std::promise<void> release;
  auto released = release.get_future().share();
  auto started = std::chrono::steady_clock::now();
  {
    TimeBoxedExecutor executor(20ms);
    EXPECT_FALSE(executor.call("hang", [released] {
      released.wait();
      return 0;
    }));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
  release.set_value();  // lets the abandoned thread finish before the test binary exits
}

TEST(TimeBoxedExecutor, InterruptEndsTheWaitAtOnceAndRefusesLaterCalls) {
  std::promise<void> release;
  auto released = release.get_future().share();
  {
    TimeBoxedExecutor executor(60s);  // a minute: the wait must not be what ends this test
    std::promise<void> entered;
    auto waiting = std::async(std::launch::async, [&] {
      return executor.call("read xpu0", [released, &entered] {
        entered.set_value();
        released.wait();
        return 0;
      });
    });
    entered.get_future().wait();
    executor.interrupt();
    ASSERT_EQ(waiting.wait_for(2s), std::future_status::ready);
    auto result = waiting.get();
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error(), "'read xpu0' abandoned: xpud is stopping");
    auto later = executor.call("read xpu1", [] { return 1; });
    ASSERT_FALSE(later);
    EXPECT_EQ(later.error(), "'read xpu1' not started: xpud is stopping");
  }
  release.set_value();  // lets the abandoned thread finish before the test binary exits
}

}  // namespace
}  // namespace xpud
