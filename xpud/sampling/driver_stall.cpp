#include "xpud/sampling/driver_stall.h"

#include <spdlog/spdlog.h>

#include "common/names.h"

namespace xpud {

void DriverStall::observe(const std::string& stuck_call, Clock::time_point now) {
  if (stuck_call.empty()) {
    if (since_)
      spdlog::info("driver responds again: '{}' returned after a {} ms stall", call_,
                   duration(now).count());
    since_.reset();
    call_.clear();
    reported_past_grace_ = false;
    return;
  }
  if (!since_) {
    // The sampler makes a call only after seeing the driver free, so a stall always ends
    // (observe with no stuck call) before another begins.
    spdlog::warn(
        "driver stalled: '{}' has not returned; cards keep their last health for up "
        "to {} ms (stall_grace_ms), without metrics",
        stuck_call, grace_.count());
    since_ = now;
    call_ = stuck_call;
  }
  if (past_grace(now) && !reported_past_grace_) {
    reported_past_grace_ = true;
    spdlog::error(
        "driver stalled for {} ms in '{}', longer than stall_grace_ms ({} ms): every "
        "card is Unhealthy until the driver returns",
        duration(now).count(), call_, grace_.count());
  }
}

std::chrono::milliseconds DriverStall::duration(Clock::time_point now) const {
  if (!since_) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - *since_);
}

HealthState DriverStall::card_health(const HealthState& last, Clock::time_point now) const {
  if (!past_grace(now)) return last;
  HealthState stalled;
  stalled.healthy = false;
  stalled.reason = std::string(kDriverStalledReason);
  stalled.reason_kind = xpu::names::reason_kind::kDriverStalled;
  stalled.consecutive_failures = last.consecutive_failures;
  return stalled;
}

}  // namespace xpud
