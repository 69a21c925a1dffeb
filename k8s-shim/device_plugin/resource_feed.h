// The latest state of one resource, shared between the thread that learns about changes and the
// gRPC streams that send it (ListAndWatch). Publishing never blocks on a stream: each stream
// wakes up, takes the newest full state and sends it, so a slow stream skips intermediate states
// instead of holding up the others or losing the last one.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "k8s-shim/device_plugin/resource_plan.h"

namespace shim {

class ResourceFeed {
 public:
  explicit ResourceFeed(ResourceState initial);
  ResourceFeed(const ResourceFeed&) = delete;
  ResourceFeed& operator=(const ResourceFeed&) = delete;

  // Set at construction and never changed.
  const std::string& resource_name() const { return resource_name_; }
  const std::string& socket_name() const { return socket_name_; }

  struct Snapshot {
    std::shared_ptr<const ResourceState> state;
    std::uint64_t generation = 0;
  };

  // Replaces the state and wakes the streams; returns false (and wakes nobody) when nothing
  // changed.
  bool publish(ResourceState state);
  Snapshot latest() const;
  // The first state newer than generation `seen`; nullopt on timeout or once closed.
  std::optional<Snapshot> wait_newer(std::uint64_t seen, std::chrono::milliseconds timeout) const;
  // Ends every stream (shutdown).
  void close();
  bool closed() const;

 private:
  const std::string resource_name_;
  const std::string socket_name_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::shared_ptr<const ResourceState> state_;  // guarded by mutex_
  std::uint64_t generation_ = 1;                // guarded by mutex_
  bool closed_ = false;                         // guarded by mutex_
};

}  // namespace shim
