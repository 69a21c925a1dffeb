#include "k8s-shim/device_plugin/resource_tracker.h"

#include <spdlog/spdlog.h>

#include "common/logging.h"
#include "common/names.h"

namespace shim {
namespace {

void log_health_changes(const ResourceState& before, const ResourceState& after) {
  for (const auto& device : after.devices) {
    const PluginDevice* old = nullptr;
    for (const auto& candidate : before.devices)
      if (candidate.id == device.id) old = &candidate;
    const std::string name = xpu::names::device_name(device.index);
    if (old == nullptr) {
      xpu::log_device_event(
          spdlog::level::info, name, device.id,
          "advertised as " + after.resource_name +
              (device.healthy ? " (Healthy)" : " (Unhealthy: " + device.unhealthy_reason + ")"));
    } else if (old->healthy != device.healthy || old->unhealthy_reason != device.unhealthy_reason) {
      xpu::log_device_event(
          device.healthy ? spdlog::level::info : spdlog::level::warn, name, device.id,
          device.healthy ? std::string("Healthy again") : "Unhealthy: " + device.unhealthy_reason);
    }
  }
  for (const auto& device : before.devices) {
    bool still = false;
    for (const auto& candidate : after.devices) still = still || candidate.id == device.id;
    if (!still)
      xpu::log_device_event(spdlog::level::warn, xpu::names::device_name(device.index), device.id,
                            "no longer reported by xpud; withdrawn from " + before.resource_name);
  }
}

}  // namespace

ResourceTracker::ResourceTracker(ResourceConfig config, Clock::duration grace_period,
                                 Clock::time_point start)
    : config_(std::move(config)), grace_period_(grace_period), absent_since_(start) {
  std::lock_guard lock(mutex_);
  replan(start);
}

void ResourceTracker::update(const xpu::DeviceView& view, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  if (view.xpud_present) {
    if (absent_since_) spdlog::info("xpud is present ({} devices)", view.devices.size());
    absent_since_.reset();
  } else if (!absent_since_) {
    spdlog::warn("xpud is gone; devices turn Unhealthy unless it returns within {} ms",
                 std::chrono::duration_cast<std::chrono::milliseconds>(grace_period_).count());
    absent_since_ = now;
  }
  view_ = view;
  replan(now);
}

void ResourceTracker::tick(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  replan(now);
}

std::optional<ResourceTracker::Clock::time_point> ResourceTracker::next_deadline() const {
  std::lock_guard lock(mutex_);
  if (!absent_since_ || lost_) return std::nullopt;
  return *absent_since_ + grace_period_;
}

std::vector<std::shared_ptr<ResourceFeed>> ResourceTracker::feeds() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<ResourceFeed>> out;
  for (const auto& [name, feed] : feeds_) out.push_back(feed);
  return out;
}

void ResourceTracker::close_all() {
  std::lock_guard lock(mutex_);
  for (const auto& [name, feed] : feeds_) feed->close();
}

void ResourceTracker::replan(Clock::time_point now) {
  const bool lost = absent_since_.has_value() && now - *absent_since_ >= grace_period_;
  if (lost && !lost_)
    spdlog::warn(
        "xpud has been gone for the grace period: every device is Unhealthy until it returns");
  lost_ = lost;

  std::map<std::string, std::string> known;
  for (const auto& [name, feed] : feeds_) known.emplace(name, feed->socket_name());
  ResourcePlan plan = plan_resources(config_, view_, lost, known);
  if (plan.problems != last_problems_) {
    for (const auto& problem : plan.problems) spdlog::warn("{}", problem);
    last_problems_ = plan.problems;
  }
  if (plan.notices != last_notices_) {
    for (const auto& notice : plan.notices) spdlog::info("{}", notice);
    last_notices_ = plan.notices;
  }
  for (auto& state : plan.resources) {
    auto it = feeds_.find(state.resource_name);
    if (it == feeds_.end()) {
      spdlog::info("serving resource {} on {}", state.resource_name, state.socket_name);
      log_health_changes(ResourceState{}, state);
      auto name = state.resource_name;
      feeds_.emplace(name, std::make_shared<ResourceFeed>(std::move(state)));
      continue;
    }
    auto before = it->second->latest().state;
    log_health_changes(*before, state);
    it->second->publish(std::move(state));
  }
}

}  // namespace shim
