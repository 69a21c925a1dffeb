// poll()'s timeout for a steady-clock deadline, shared by every role loop that waits on poll().
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>

namespace shim {

// Milliseconds from `now` to `deadline`, rounded up (waking a hair early would only spin once
// more), 0 for a deadline already past, and never more than an int holds.
inline int poll_timeout_ms(
    std::chrono::steady_clock::time_point deadline,
    std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now()) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
  return static_cast<int>(std::clamp<std::int64_t>(left, 0, std::numeric_limits<int>::max()));
}

}  // namespace shim
