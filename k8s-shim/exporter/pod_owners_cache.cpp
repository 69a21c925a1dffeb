#include "k8s-shim/exporter/pod_owners_cache.h"

#include <spdlog/spdlog.h>

namespace shim::exporter {

std::shared_ptr<const PodOwnersCache::Owners> PodOwnersCache::get_shared(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  // A caller that started before the last List (it waited for it on the mutex) takes its answer.
  if (fetched_at_ && now < *fetched_at_ + max_age_) return owners_;

  auto reply = lister_();
  const bool was_up = owners_->up || !fetched_at_;
  Owners fresh;  // a stale map could name the wrong pod; without an answer there are no pod labels
  if (reply) {
    PodMap pods = builder_.update(*reply);
    fresh = Owners{true, std::move(pods), builder_.cards_with_several_holders()};
    if (!was_up) spdlog::info("pod-resources: the kubelet answers again");
  } else if (was_up) {
    spdlog::warn("{}", reply.error());
  }
  if (fresh != *owners_) owners_ = std::make_shared<const Owners>(std::move(fresh));
  fetched_at_ = now;
  return owners_;
}

}  // namespace shim::exporter
