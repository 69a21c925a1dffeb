#include "k8s-shim/device_plugin/resource_tracker.h"

#include <spdlog/spdlog.h>

#include "common/logging.h"
#include "common/names.h"

namespace shim {
namespace {

void log_health_changes(const ResourceState& before, const ResourceState& after,
                        const HeldCards& held) {
  for (const auto& device : after.devices) {
    const PluginDevice* old = nullptr;
    for (const auto& candidate : before.devices)
      if (candidate.id == device.id) old = &candidate;
    // A function on vfio-pci has no xpuN: its PCI address names it.
    const std::string name = after.vfio ? device.id : xpu::names::device_name(device.index);
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
    if (still) continue;
    if (before.vfio)
      xpu::log_device_event(spdlog::level::info, device.id, device.id,
                            (held.vfio_functions.contains(device.id)
                                 ? "held by a pod through a DRA claim; withdrawn from "
                                 : "no longer on vfio-pci; withdrawn from ") +
                                before.resource_name);
    else if (held.uuids.contains(device.card_id) || held.indices.contains(device.index))
      xpu::log_device_event(spdlog::level::info, xpu::names::device_name(device.index), device.id,
                            "held by a pod through a DRA claim; withdrawn from " +
                                before.resource_name + " while it holds it");
    else
      xpu::log_device_event(spdlog::level::warn, xpu::names::device_name(device.index), device.id,
                            "no longer reported by xpud; withdrawn from " + before.resource_name);
  }
}

}  // namespace

ResourceTracker::ResourceTracker(ResourceConfig config, const CardState& cards,
                                 Clock::time_point start)
    : config_(std::move(config)), cards_(cards) {
  refresh(start);
}

void ResourceTracker::refresh(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  plan(now, false);
}

void ResourceTracker::set_held(HeldCards held, std::uint64_t generation, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  if (generation <= held_generation_) return;
  held_generation_ = generation;
  if (held == held_) return;
  held_ = std::move(held);
  plan(now, true);
}

void ResourceTracker::plan(Clock::time_point now, bool held_changed) {
  // The cards are read under mutex_, so two callers (the watcher's thread, the role's) plan their
  // generations in order and an older one is never published over a newer one.
  const CardState::Snapshot cards = cards_.at(now);
  next_deadline_ = cards.changes_at;
  if (cards.generation == planned_generation_ && !held_changed) return;
  planned_generation_ = cards.generation;
  log_xpud_changes(cards);
  replan(*cards.view);
}

std::optional<ResourceTracker::Clock::time_point> ResourceTracker::next_deadline() const {
  std::lock_guard lock(mutex_);
  return next_deadline_;
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

void ResourceTracker::log_xpud_changes(const CardState::Snapshot& cards) {
  if (cards.view->xpud_present && !xpud_present_) {
    spdlog::info("xpud is present ({} devices)", cards.view->devices.size());
  } else if (!cards.view->xpud_present && xpud_present_) {
    spdlog::warn(
        "xpud is gone; devices turn Unhealthy unless it returns within {} ms",
        std::chrono::duration_cast<std::chrono::milliseconds>(cards_.grace_period()).count());
  }
  if (cards.xpud_lost && !xpud_lost_)
    spdlog::warn(
        "xpud has been gone for the grace period: every device is Unhealthy until it returns");
  xpud_present_ = cards.view->xpud_present;
  xpud_lost_ = cards.xpud_lost;
}

void ResourceTracker::replan(const xpu::DeviceView& view) {
  std::map<std::string, std::string> known;
  for (const auto& [name, feed] : feeds_) known.emplace(name, feed->socket_name());
  std::vector<std::string> held;
  ResourcePlan plan = plan_resources(config_, without_held_cards(view, held_, &held), known);
  if (!held.empty()) {
    std::string names;
    for (const auto& name : held) names += (names.empty() ? "" : ", ") + name;
    plan.notices.push_back("devices " + names +
                           " are not advertised: pods hold them through DRA claims "
                           "(the kubelet's pod-resources)");
  }
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
      log_health_changes(ResourceState{}, state, held_);
      auto name = state.resource_name;
      feeds_.emplace(name, std::make_shared<ResourceFeed>(std::move(state)));
      continue;
    }
    auto before = it->second->latest().state;
    log_health_changes(*before, state, held_);
    it->second->publish(std::move(state));
  }
}

}  // namespace shim
