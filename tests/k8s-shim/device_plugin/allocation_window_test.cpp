// The plugin's own pod-resources List waits while one of its Allocate calls is under way
// (allocation_window.h says why: the kubelet frees the devices of an Allocate under way on a
// List).
#include "k8s-shim/device_plugin/allocation_window.h"

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <thread>

#include "tests/support/wait.h"

namespace shim {
namespace {

using namespace std::chrono_literals;
using Clock = AllocationWindow::Clock;
using xpu::test::wait_until;

TEST(AllocationWindow, AListGoesAtOnceWhenNoAllocateWasUnderWay) {
  AllocationWindow window;
  const auto asked = Clock::now();
  window.wait_closed(asked + 30s);
  EXPECT_LT(Clock::now() - asked, AllocationWindow::kSettle);
}

TEST(AllocationWindow, AListWaitsForTheAllocateAndTheSettleAfterIt) {
  AllocationWindow window;
  std::optional<AllocationWindow::Open> allocate(std::in_place, window);
  std::atomic<bool> listed{false};
  std::thread list([&] {
    window.wait_closed(Clock::now() + 60s);
    listed = true;
  });
  // While the Allocate is under way, the List does not go.
  EXPECT_FALSE(wait_until([&] { return listed.load(); }, 300ms));
  const auto answered = Clock::now();
  allocate.reset();
  EXPECT_TRUE(wait_until([&] { return listed.load(); }, 30s));
  list.join();
  EXPECT_GE(Clock::now() - answered, AllocationWindow::kSettle);
}

TEST(AllocationWindow, AListWaitsNoLongerThanItsDeadline) {
  AllocationWindow window;
  const AllocationWindow::Open allocate(window);  // never answers within the test
  const auto asked = Clock::now();
  window.wait_closed(asked + 200ms);
  EXPECT_GE(Clock::now() - asked, 200ms);
}

}  // namespace
}  // namespace shim
