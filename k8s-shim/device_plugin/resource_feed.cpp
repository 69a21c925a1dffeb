#include "k8s-shim/device_plugin/resource_feed.h"

namespace shim {

ResourceFeed::ResourceFeed(ResourceState initial)
    : resource_name_(initial.resource_name),
      socket_name_(initial.socket_name),
      state_(std::make_shared<const ResourceState>(std::move(initial))) {}

bool ResourceFeed::publish(ResourceState state) {
  {
    std::lock_guard lock(mutex_);
    if (*state_ == state) return false;
    state_ = std::make_shared<const ResourceState>(std::move(state));
    ++generation_;
  }
  changed_.notify_all();
  return true;
}

ResourceFeed::Snapshot ResourceFeed::latest() const {
  std::lock_guard lock(mutex_);
  return Snapshot{state_, generation_};
}

std::optional<ResourceFeed::Snapshot> ResourceFeed::wait_newer(
    std::uint64_t seen, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return closed_ || generation_ != seen; });
  if (closed_ || generation_ == seen) return std::nullopt;
  return Snapshot{state_, generation_};
}

void ResourceFeed::close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  changed_.notify_all();
}

bool ResourceFeed::closed() const {
  std::lock_guard lock(mutex_);
  return closed_;
}

}  // namespace shim
