// The cards as one shim process acts on them: xpud's view, except that once xpud has been gone
// (or silent) for longer than the grace period every card is unhealthy, until xpud is back. Its
// last word on health is then too old to offer or report a card on, while a short restart of
// xpud reaches no one. Each role that reads cards keeps one CardState and reads them from it, not
// from the xpud client: the device plugin's feeds, the DRA slice, the kubelet's health stream,
// NodePrepareResources and the exporter's card series, so the grace period is counted once and
// no two of them disagree on a card.
//
// A reader asks for the cards at a time and gets them with a generation and a deadline. The
// generation moves whenever what at() answers changes: news from xpud that changes the view, or
// the grace period running out; the same view twice is no news. So a reader that built something
// from generation N builds again only for another. The deadline is when the answer will change
// by itself (the grace period running out), for a loop to wake up at.
//
// Time only moves forward here: at() and update() take the latest of the times they were given,
// so two readers whose clocks were read a moment apart never see the generation go back.
//
// Threads: update() from the xpud watcher's thread, at() from any; one mutex guards everything.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "common/xpud_types.h"

namespace shim {

// What every card says past the grace period. The kind is a fixed word, as xpud's
// HealthReasonKind is: the exporter's reason label shows it, and DRA device taints key on it.
inline constexpr std::string_view kXpudUnreachableReason =
    "xpud has been unreachable for longer than the grace period";
inline constexpr std::string_view kXpudUnreachableReasonKind = "xpud_unreachable";

class CardState {
 public:
  using Clock = std::chrono::steady_clock;

  struct Snapshot {
    std::shared_ptr<const xpu::DeviceView> view;  // never null; the last known cards while gone
    std::uint64_t generation = 0;                 // 1 for the first answer, then up by one a change
    // When the answer will change by itself (xpud gone and the grace period not yet over).
    std::optional<Clock::time_point> changes_at;
    bool xpud_lost = false;  // past the grace period: every card unhealthy for that reason
  };

  // xpud counts as gone from `start` until a view says otherwise, so a process that never sees
  // xpud reports it lost after the grace period too.
  CardState(Clock::duration grace_period, Clock::time_point start);

  // xpud's view as the watcher hands it, at `now`.
  void update(const xpu::DeviceView& view, Clock::time_point now);
  Snapshot at(Clock::time_point now) const;
  // The cards of at(now), for a caller that needs nothing else (NodePrepareResources).
  std::vector<xpu::DeviceInfo> cards_at(Clock::time_point now) const;
  Clock::duration grace_period() const { return grace_period_; }

 private:
  // With mutex_ held: moves the clock to `now` (never back) and the answer with it.
  void advance(Clock::time_point now) const;
  // With mutex_ held: the answer xpud's last view gives at now_.
  void settle() const;

  const Clock::duration grace_period_;
  mutable std::mutex mutex_;
  // Guarded by mutex_. The answer (view_, lost_, generation_) is mutable: it follows the clock,
  // which at() moves too.
  std::shared_ptr<const xpu::DeviceView> reported_;  // xpud's last view, as the watcher handed it
  std::optional<Clock::time_point> absent_since_;
  mutable Clock::time_point now_;
  mutable std::shared_ptr<const xpu::DeviceView> view_;
  mutable bool lost_ = false;
  mutable std::uint64_t generation_ = 1;
};

}  // namespace shim
