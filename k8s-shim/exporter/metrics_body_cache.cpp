#include "k8s-shim/exporter/metrics_body_cache.h"

namespace shim::exporter {

MetricsBodyCache::Body MetricsBodyCache::get(Inputs inputs,
                                             const std::function<std::string()>& build) {
  std::lock_guard lock(mutex_);
  if (built_from_ && *built_from_ == inputs) return body_;
  auto body = std::make_shared<const std::string>(build());
  body_ = std::move(body);
  built_from_ = std::move(inputs);
  ++builds_;
  return body_;
}

std::uint64_t MetricsBodyCache::builds() const {
  std::lock_guard lock(mutex_);
  return builds_;
}

}  // namespace shim::exporter
