#include "k8s-shim/cards/card_state.h"

#include <algorithm>
#include <string>

namespace shim {
namespace {

std::shared_ptr<const xpu::DeviceView> every_card_unreachable(xpu::DeviceView view) {
  for (auto& device : view.devices) {
    device.healthy = false;
    device.health_reason = std::string(kXpudUnreachableReason);
    device.health_reason_kind = std::string(kXpudUnreachableReasonKind);
  }
  return std::make_shared<const xpu::DeviceView>(std::move(view));
}

}  // namespace

CardState::CardState(Clock::duration grace_period, Clock::time_point start)
    : grace_period_(grace_period),
      reported_(std::make_shared<const xpu::DeviceView>()),
      absent_since_(start),
      now_(start),
      view_(reported_),
      // Gone since the start: with no grace at all, lost at once.
      lost_(grace_period <= Clock::duration::zero()) {}

void CardState::update(const xpu::DeviceView& view, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  advance(now);
  if (view.xpud_present)
    absent_since_.reset();
  else if (!absent_since_)
    absent_since_ = now_;
  reported_ = std::make_shared<const xpu::DeviceView>(view);
  settle();
}

CardState::Snapshot CardState::at(Clock::time_point now) const {
  std::lock_guard lock(mutex_);
  advance(now);
  Snapshot snapshot{.view = view_, .generation = generation_, .changes_at = {}, .xpud_lost = lost_};
  if (absent_since_ && !lost_) snapshot.changes_at = *absent_since_ + grace_period_;
  return snapshot;
}

std::vector<xpu::DeviceInfo> CardState::cards_at(Clock::time_point now) const {
  return at(now).view->devices;
}

void CardState::advance(Clock::time_point now) const {
  now_ = std::max(now_, now);
  // Only the grace period running out changes the answer without news.
  if (absent_since_ && !lost_ && now_ - *absent_since_ >= grace_period_) settle();
}

void CardState::settle() const {
  const bool lost = absent_since_ && now_ - *absent_since_ >= grace_period_;
  auto view = lost ? every_card_unreachable(*reported_) : reported_;
  if (lost == lost_ && *view == *view_) return;
  view_ = std::move(view);
  lost_ = lost;
  ++generation_;
}

}  // namespace shim
