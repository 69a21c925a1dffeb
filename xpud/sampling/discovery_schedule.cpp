#include "xpud/sampling/discovery_schedule.h"

namespace xpud {

std::optional<std::string_view> DiscoverySchedule::take_due(
    Clock::time_point now, std::chrono::milliseconds rescan_interval) {
  // Read (and clear) the request first, whatever else makes this cycle discover: an event that
  // arrives during the discovery below then gets a discovery of its own.
  const bool requested = requested_.exchange(false);
  std::optional<std::string_view> why;
  if (!last_)
    why = "start";
  else if (requested)
    why = "device event";
  else if (gone_seen_)
    why = "a card is gone";
  else if (retry_)
    why = "retrying the failed discovery";
  else if (now - *last_ >= rescan_interval)
    why = "safety rescan";
  gone_seen_ = false;
  return why;
}

void DiscoverySchedule::discovered(Clock::time_point now, bool ok) {
  last_ = now;
  retry_ = !ok;
}

void DiscoverySchedule::note_read(const std::string& uuid, bool gone) {
  if (!gone) {
    gone_reported_.erase(uuid);
    return;
  }
  if (gone_reported_.insert(uuid).second) gone_seen_ = true;
}

}  // namespace xpud
