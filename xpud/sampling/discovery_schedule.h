// When the sampler asks the backend which cards exist. Discovery costs several driver calls per
// card, and cards come and go rarely and announce it (uevents), so it runs only: on the first
// cycle, after a device event, after a read that says a card is gone, after a failed discovery,
// and every rescan interval as a safety net for events that never arrived. Metrics are read on
// every cycle regardless.
//
// Threads: request() from any thread; everything else from the sampler thread.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace xpud {

class DiscoverySchedule {
 public:
  using Clock = std::chrono::steady_clock;

  // The next cycle discovers (a device event arrived).
  void request() { requested_ = true; }

  // Whether the cycle starting at `now` discovers, and why (for the debug log). Consumes a
  // pending request.
  std::optional<std::string_view> take_due(Clock::time_point now,
                                           std::chrono::milliseconds rescan_interval);
  // The outcome of the discovery take_due() asked for; a failed one is retried next cycle.
  void discovered(Clock::time_point now, bool ok);
  // After each read: a card whose read says it is gone triggers one discovery, and no more
  // until a read finds it again (a card that stays lost does not bring back polling).
  void note_read(const std::string& uuid, bool gone);
  // A card discovery no longer finds.
  void forget(const std::string& uuid) { gone_reported_.erase(uuid); }

 private:
  std::atomic<bool> requested_{false};
  bool gone_seen_ = false;
  bool retry_ = false;
  std::optional<Clock::time_point> last_;
  std::set<std::string> gone_reported_;
};

}  // namespace xpud
