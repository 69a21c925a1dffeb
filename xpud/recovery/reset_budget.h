// How many resets each card may still have: at most `per_hour` within any hour, a sliding window
// per card (by UUID, which survives index changes). A card that fails again right after every
// reset is then left out instead of being reset in a loop, and one bad card does not use up the
// other cards' allowance.
//
// Threads: the daemon's main thread (CardRecovery owns it).
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <string>

namespace xpud {

class ResetBudget {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::hours kWindow{1};

  explicit ResetBudget(unsigned per_hour) : per_hour_(per_hour) {}
  // A lower limit applies at once to the resets already in the window.
  void set_limit(unsigned per_hour) { per_hour_ = per_hour; }
  unsigned limit() const { return per_hour_; }

  // nullopt when the card may be reset at `now`; otherwise when it may next be.
  std::optional<Clock::time_point> next_allowed(const std::string& uuid, Clock::time_point now);
  void spend(const std::string& uuid, Clock::time_point now);
  // Gives back the reset spent at `at` (one that never reached the card).
  void refund(const std::string& uuid, Clock::time_point at);
  void forget(const std::string& uuid) { spent_.erase(uuid); }

 private:
  unsigned per_hour_;
  std::map<std::string, std::deque<Clock::time_point>> spent_;  // oldest first
};

}  // namespace xpud
