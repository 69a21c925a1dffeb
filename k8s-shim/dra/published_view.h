// The view of the cards the ResourceSlice is made from: xpud's, except that once xpud has been
// gone (or silent) for longer than the grace period every card is unhealthy. Its last word on
// health is then too old to offer a card on, while a short restart of xpud does not reach the
// scheduler at all.
//
// Threads: update() from the xpud watcher's thread, at() from the role's; a mutex guards both.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <utility>

#include "common/xpud_client.h"

namespace shim::dra {

class PublishedView {
 public:
  using Clock = std::chrono::steady_clock;
  // The device plugin's default --xpud-grace-period.
  static constexpr std::chrono::seconds kDefaultGracePeriod{10};

  explicit PublishedView(std::chrono::seconds grace_period = kDefaultGracePeriod)
      : grace_period_(grace_period) {}

  void update(const xpu::DeviceView& view, Clock::time_point now);

  // The view to publish at `now`, and when it will change by itself (the grace period running
  // out), if it will.
  std::pair<xpu::DeviceView, std::optional<Clock::time_point>> at(Clock::time_point now) const;

 private:
  const std::chrono::seconds grace_period_;
  mutable std::mutex mutex_;
  xpu::DeviceView view_;                           // guarded by mutex_
  std::optional<Clock::time_point> absent_since_;  // guarded by mutex_
};

}  // namespace shim::dra
