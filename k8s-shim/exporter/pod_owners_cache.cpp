#include "k8s-shim/exporter/pod_owners_cache.h"

#include <spdlog/spdlog.h>

namespace shim::exporter {

PodOwnersCache::Owners PodOwnersCache::get(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  // A caller that started before the last List (it waited for it on the mutex) takes its answer.
  if (fetched_at_ && now < *fetched_at_ + max_age_) return owners_;

  auto reply = lister_();
  const bool was_up = owners_.up || !fetched_at_;
  if (reply) {
    PodMap pods = builder_.update(*reply);
    owners_ = Owners{true, std::move(pods), builder_.cards_with_several_holders()};
    if (!was_up) spdlog::info("pod-resources: the kubelet answers again");
  } else {
    // A stale map could name the wrong pod; without an answer there are no pod labels.
    owners_ = Owners{};
    if (was_up) spdlog::warn("{}", reply.error());
  }
  fetched_at_ = now;
  return owners_;
}

}  // namespace shim::exporter
