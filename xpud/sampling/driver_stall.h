// Tells "the driver is stalled" from "this card is faulty".
//
// A driver call that overruns call_timeout_ms keeps running on the driver thread, and every later
// call fails at once with "driver busy" until it returns (time_boxed_executor.h). Those failures
// say nothing about the cards: one hung call would otherwise mark all eight Unhealthy and take
// the whole node away from the scheduler. So while the driver is stalled the sampler does not
// read the cards at all; each card keeps the health it had (its metrics are absent, since none
// were read) for at most `stall_grace`, and only past the grace does it turn Unhealthy with the
// reason "driver stalled", because a driver gone for that long serves no workload either.
//
// The call that timed out still counts as one failed read of its own card (HealthMonitor), so a
// card whose every read hangs goes Unhealthy by its own failures even if each hang ends before
// the grace does.
//
// Owned by the sampler thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "xpud/sampling/health_monitor.h"

namespace xpud {

// The HealthReason of a card past the grace (HealthReasonKind driver_stalled).
inline constexpr std::string_view kDriverStalledReason = "driver stalled";

class DriverStall {
 public:
  using Clock = std::chrono::steady_clock;

  explicit DriverStall(std::chrono::milliseconds grace) : grace_(grace) {}
  void set_grace(std::chrono::milliseconds grace) { grace_ = grace; }

  // Records what the driver thread is doing at `now`: `stuck_call` names the call that timed
  // out and has not returned, empty when there is none. Logs the start of a stall, the moment it
  // outlasts the grace, and its end.
  void observe(const std::string& stuck_call, Clock::time_point now);

  bool stalled() const { return since_.has_value(); }
  // How long the current stall has lasted at `now`; zero when not stalled.
  std::chrono::milliseconds duration(Clock::time_point now) const;
  bool past_grace(Clock::time_point now) const { return stalled() && duration(now) > grace_; }

  // The health to report for a card while stalled: `last` (what it had before) within the
  // grace, Unhealthy "driver stalled" past it.
  HealthState card_health(const HealthState& last, Clock::time_point now) const;

 private:
  std::chrono::milliseconds grace_;
  std::optional<Clock::time_point> since_;  // when the current stall was first seen
  std::string call_;                        // the call it is stuck in
  bool reported_past_grace_ = false;
};

}  // namespace xpud
