// Waiting on a condition with a deadline instead of sleeping and hoping.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace xpu::test {

// Polls `condition` every few milliseconds until it holds or `timeout` passes; returns its last
// value.
inline bool wait_until(const std::function<bool()>& condition,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return condition();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace xpu::test
