// Turns the process's card view into the resources' feeds: plans the resources from the
// CardState (which applies the grace period), without the cards pods hold through DRA claims
// (set_held), and publishes each one that changed. refresh() is
// called from the card feed's watcher thread, after each view has reached the CardState, and from
// the role's loop at next_deadline (the grace period running out); every member is guarded by one
// mutex, held only while planning, never across a send.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "k8s-shim/cards/card_state.h"
#include "k8s-shim/device_plugin/resource_feed.h"
#include "k8s-shim/device_plugin/resource_plan.h"
#include "k8s-shim/pod_resources/held_cards.h"

namespace shim {

class ResourceTracker {
 public:
  using Clock = CardState::Clock;

  // Plans from `cards` (which must outlive the tracker) at `start`.
  ResourceTracker(ResourceConfig config, const CardState& cards, Clock::time_point start);

  // Plans again when the cards' generation at `now` is one not planned yet.
  void refresh(Clock::time_point now);
  // The cards pods hold through DRA claims (pod-resources) as of the watch's `generation`: not
  // advertised while held. Plans again when they changed. A generation not newer than the last
  // one set is ignored: the role's loop and a decision that asked for a fresh answer both set
  // them, in either order.
  void set_held(HeldCards held, std::uint64_t generation, Clock::time_point now);
  // When refresh() must run next for the grace period to end on time; nullopt when nothing waits.
  std::optional<Clock::time_point> next_deadline() const;
  // Every resource served so far (a resource is never dropped), ascending resource name.
  std::vector<std::shared_ptr<ResourceFeed>> feeds() const;
  void close_all();

 private:
  void plan(Clock::time_point now, bool held_changed);      // mutex_ held
  void log_xpud_changes(const CardState::Snapshot& cards);  // mutex_ held
  void replan(const xpu::DeviceView& view);                 // mutex_ held

  const ResourceConfig config_;
  const CardState& cards_;
  mutable std::mutex mutex_;
  std::uint64_t planned_generation_ = 0;
  std::optional<Clock::time_point> next_deadline_;
  bool xpud_present_ = false;
  bool xpud_lost_ = false;
  std::map<std::string, std::shared_ptr<ResourceFeed>> feeds_;  // by resource name
  std::vector<std::string> last_problems_;
  std::vector<std::string> last_notices_;
  HeldCards held_;
  std::uint64_t held_generation_ = 0;
};

}  // namespace shim
