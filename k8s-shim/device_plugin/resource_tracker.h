// Turns xpud's views into the resources' feeds: applies the grace period (xpud gone that long:
// every device Unhealthy), plans the resources and publishes each one that changed. Called from
// the xpud client's watcher thread (update) and from the role's loop (tick, at next_deadline);
// every member is guarded by one mutex, held only while planning, never across a send.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "common/xpud_client.h"
#include "k8s-shim/device_plugin/resource_feed.h"
#include "k8s-shim/device_plugin/resource_plan.h"

namespace shim {

class ResourceTracker {
 public:
  using Clock = std::chrono::steady_clock;

  // xpud counts as absent from `start` until the first view says otherwise.
  ResourceTracker(ResourceConfig config, Clock::duration grace_period, Clock::time_point start);

  void update(const xpu::DeviceView& view, Clock::time_point now);
  void tick(Clock::time_point now);
  // When tick() must run next for the grace period to end on time; nullopt when nothing waits.
  std::optional<Clock::time_point> next_deadline() const;
  // Every resource served so far (a resource is never dropped), ascending resource name.
  std::vector<std::shared_ptr<ResourceFeed>> feeds() const;
  void close_all();

 private:
  void replan(Clock::time_point now);  // mutex_ held

  const ResourceConfig config_;
  const Clock::duration grace_period_;
  mutable std::mutex mutex_;
  xpu::DeviceView view_;
  std::optional<Clock::time_point> absent_since_;
  bool lost_ = false;
  std::map<std::string, std::shared_ptr<ResourceFeed>> feeds_;  // by resource name
  std::vector<std::string> last_problems_;
  std::vector<std::string> last_notices_;
};

}  // namespace shim
