// The DRA role's one view of the cards: xpud's, except that once xpud has been gone (or silent) for
// longer than the grace period every card is unhealthy. Its last word on health is then too old to
// offer a card on, while a short restart of xpud does not reach the scheduler at all. The slice,
// the kubelet's health stream and NodePrepareResources all read it, so prepare never hands out a
// card the slice already calls unhealthy (it read xpud's raw view once, and did).
//
// Threads: update() from the xpud watcher's thread, at() from the role's; a mutex guards both.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "common/xpud_client.h"
#include "k8s-shim/shim_options.h"

namespace shim::dra {

class PublishedView {
 public:
  using Clock = std::chrono::steady_clock;
  explicit PublishedView(std::chrono::seconds grace_period = shim::kDefaultXpudGracePeriod)
      : grace_period_(grace_period) {}

  void update(const xpu::DeviceView& view, Clock::time_point now);

  // The view to publish at `now`, and when it will change by itself (the grace period running
  // out), if it will.
  std::pair<xpu::DeviceView, std::optional<Clock::time_point>> at(Clock::time_point now) const;
  // The cards prepare may hand out at `now`: those of at(now).
  std::vector<xpu::DeviceInfo> cards_at(Clock::time_point now) const {
    return at(now).first.devices;
  }

 private:
  const std::chrono::seconds grace_period_;
  mutable std::mutex mutex_;
  xpu::DeviceView view_;                           // guarded by mutex_
  std::optional<Clock::time_point> absent_since_;  // guarded by mutex_
};

}  // namespace shim::dra
