#include "xpud/recovery/reset_budget.h"

#include <algorithm>

namespace xpud {

std::optional<ResetBudget::Clock::time_point> ResetBudget::next_allowed(const std::string& uuid,
                                                                        Clock::time_point now) {
  auto card = spent_.find(uuid);
  if (card == spent_.end()) return std::nullopt;
  auto& times = card->second;
  while (!times.empty() && times.front() + kWindow <= now) times.pop_front();
  if (times.empty()) {
    spent_.erase(card);
    return std::nullopt;
  }
  if (times.size() < per_hour_) return std::nullopt;
  // The reset that must leave the window before another fits.
  return times[times.size() - per_hour_] + kWindow;
}

void ResetBudget::spend(const std::string& uuid, Clock::time_point now) {
  spent_[uuid].push_back(now);
}

void ResetBudget::refund(const std::string& uuid, Clock::time_point at) {
  auto card = spent_.find(uuid);
  if (card == spent_.end()) return;
  auto found = std::find(card->second.begin(), card->second.end(), at);
  if (found != card->second.end()) card->second.erase(found);
  if (card->second.empty()) spent_.erase(card);
}

}  // namespace xpud
