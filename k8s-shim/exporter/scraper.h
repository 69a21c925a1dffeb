// One scrape: xpud's GetMetrics, the watcher's device view and the cached pod map, rendered as
// Prometheus text for /metrics or as the HTML page for /.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/xpud_client.h"
#include "k8s-shim/exporter/metrics_body_cache.h"
#include "k8s-shim/exporter/metrics_renderer.h"
#include "k8s-shim/exporter/pod_owners_cache.h"
#include "k8s-shim/exporter/single_flight.h"

namespace shim::exporter {

class Scraper {
 public:
  // A GetMetrics answer serves every scrape that starts within kShareMetricsFor of its call:
  // xpud samples once a second by default, so a second call in that time would mostly return the
  // same snapshot, and scrapes that queued behind a hung call do not each wait out their own.
  static constexpr std::chrono::milliseconds kShareMetricsFor{1000};

  Scraper(xpu::XpudClient& xpud, PodOwnersCache& pods)
      : xpud_(xpud), pods_(pods), get_metrics_([&xpud] { return fetch(xpud); }, kShareMetricsFor) {}

  // Thread-safe; bounded by the xpud call timeout plus the pod-resources deadline, however many
  // scrapes run at once (they share one GetMetrics and one List). The body is built again only
  // when the sample, the pod map or the device view changed since the last one (see
  // MetricsBodyCache); otherwise the same bytes are returned, followed by this scrape's own
  // xpu_exporter_scrape_duration_seconds.
  MetricsBody scrape_body();

  // The `/` page from the same inputs, under the same bounds.
  std::string status_page();

  // What the watcher's listener calls after every change of the device view (a card's health
  // or identity, cards added or gone, xpud leaving), so that the next scrape builds a new body.
  // Safe to call after the scraper is gone: the watcher's thread may outlive it.
  std::function<void()> view_change_notifier() const {
    return [generation = view_generation_] { generation->fetch_add(1, std::memory_order_acq_rel); };
  }

 private:
  // What one trip to xpud brings: GetMetrics, then GetProcesses when xpud answered the first
  // (a hung xpud costs one call timeout, not two). Immutable once made, and shared: its address
  // tells a scrape whether the sample is the one the cached body was built from.
  struct XpudSample {
    xpu::Result<xpu::MetricsSnapshot> metrics;
    std::optional<xpu::ProcessSnapshot> processes;
  };
  using SharedSample = std::shared_ptr<const XpudSample>;
  static SharedSample fetch(xpu::XpudClient& xpud);

  static ScrapeInputs inputs_from(const XpudSample& sample, const PodOwnersCache::Owners& owners,
                                  xpu::DeviceView view, double scrape_duration_seconds);
  ScrapeInputs gather();

  xpu::XpudClient& xpud_;
  PodOwnersCache& pods_;
  SingleFlight<SharedSample> get_metrics_;
  // Read before the view itself, so a body is never remembered under a generation newer than
  // the view it was built from (at worst one body too many is built).
  const std::shared_ptr<std::atomic<std::uint64_t>> view_generation_ =
      std::make_shared<std::atomic<std::uint64_t>>(0);
  MetricsBodyCache bodies_;
};

}  // namespace shim::exporter
