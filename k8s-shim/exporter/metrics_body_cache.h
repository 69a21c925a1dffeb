// The /metrics body, built once per change of what it is made of and then served as the same
// bytes to every scrape until the next change (followed by each scrape's own duration, see
// MetricsBody). The body is a function of one xpud sample (one
// GetMetrics and GetProcesses trip, shared by the scrapes of a second), the pod map and the
// process's CardState (identity and health of the cards); building it costs a millisecond or more
// at 64 cards, sending it a fraction of that, so a burst of scrapes (several Prometheus servers, a
// dashboard, a benchmark) costs one build rather than one each.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace shim::exporter {

// A /metrics reply in two parts: the bytes kept between scrapes (everything but the scrape's own
// duration), shared and sent without a copy, then the scrape's own tail (its duration family, a
// few hundred bytes).
struct MetricsBody {
  std::shared_ptr<const std::string> kept;
  std::string tail;
};

class MetricsBodyCache {
 public:
  using Body = std::shared_ptr<const std::string>;

  // What a body is built from, by identity rather than by value: the sample and the pod map are
  // immutable objects replaced when they change (PodOwnersCache keeps its object while List
  // answers the same), and the cards have the CardState's generation, which moves on every change
  // the watcher reports and when xpud's grace period runs out.
  // Comparing them costs three loads whatever the number of cards. The cache holds the objects
  // of the last build, so an address cannot be reused for a different object while it matters.
  struct Inputs {
    std::shared_ptr<const void> sample;
    std::shared_ptr<const void> pod_owners;
    std::uint64_t view_generation = 0;

    bool operator==(const Inputs&) const = default;  // pointers and generation
  };

  // Thread-safe. The body built from `inputs`: the last one when it was built from the same
  // inputs, otherwise a new one from build() (called under the cache's lock, so scrapes that
  // arrive together with new inputs wait for one build instead of each building their own).
  // If build() throws, nothing is remembered and the exception reaches the caller.
  Body get(Inputs inputs, const std::function<std::string()>& build);

  // How many bodies were built so far.
  std::uint64_t builds() const;

 private:
  mutable std::mutex mutex_;
  std::optional<Inputs> built_from_;  // guarded by mutex_
  Body body_;                         // guarded by mutex_
  std::uint64_t builds_ = 0;          // guarded by mutex_
};

}  // namespace shim::exporter
