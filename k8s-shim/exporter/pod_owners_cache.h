// The pod map the scrapes share: one List per max_age at most, however many scrapes arrive.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "common/result.h"
#include "k8s-shim/exporter/pod_map.h"

namespace shim::exporter {

class PodOwnersCache {
 public:
  using Lister = std::function<xpu::Result<v1::ListPodResourcesResponse>()>;
  using Clock = std::chrono::steady_clock;

  struct Owners {
    bool up = false;  // the List behind `pods` answered; pods is empty otherwise
    PodMap pods;
    std::set<std::string> shared_cards;  // PodMapBuilder::cards_with_several_holders

    bool operator==(const Owners&) const = default;
  };

  PodOwnersCache(Lister lister, std::chrono::milliseconds max_age,
                 PodMapBuilder builder = PodMapBuilder())
      : lister_(std::move(lister)), max_age_(max_age), builder_(std::move(builder)) {}

  // Thread-safe. Calls the lister when the last answer (or failure) is max_age older than `now`
  // (when the caller's scrape started); concurrent callers wait for that one call instead of
  // issuing their own.
  Owners get(Clock::time_point now) { return *get_shared(now); }

  // The same, without copying the map: the object is replaced only when a List answer differs
  // from the one before (or the kubelet stops or starts answering), so the pointer identifies
  // the content and a scrape can tell from it alone whether the pod map changed.
  std::shared_ptr<const Owners> get_shared(Clock::time_point now);

 private:
  Lister lister_;
  std::chrono::milliseconds max_age_;
  std::mutex mutex_;  // guards everything below and serialises List calls
  PodMapBuilder builder_;
  std::optional<Clock::time_point> fetched_at_;
  std::shared_ptr<const Owners> owners_ = std::make_shared<const Owners>();
};

}  // namespace shim::exporter
