#include "k8s-shim/dra/published_view.h"

namespace shim::dra {

void PublishedView::update(const xpu::DeviceView& view, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  if (view.xpud_present)
    absent_since_.reset();
  else if (!absent_since_)
    absent_since_ = now;
  view_ = view;
}

std::pair<xpu::DeviceView, std::optional<PublishedView::Clock::time_point>> PublishedView::at(
    Clock::time_point now) const {
  std::lock_guard lock(mutex_);
  xpu::DeviceView view = view_;
  if (!absent_since_) return {view, std::nullopt};
  const auto expiry = *absent_since_ + grace_period_;
  if (now < expiry) return {view, expiry};
  for (auto& device : view.devices) {
    device.healthy = false;
    device.health_reason = "xpud has been unreachable for longer than the grace period";
  }
  return {view, std::nullopt};
}

}  // namespace shim::dra
