// One scrape: xpud's GetMetrics, the process's CardState (the watcher's view of the cards with the
// grace period applied) and the cached pod map, rendered as Prometheus text for /metrics or as
// the HTML page for /.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "common/xpud_client.h"
#include "k8s-shim/cards/card_state.h"
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

  // `cards` is the role's CardState, which the watcher's listener updates.
  Scraper(xpu::XpudClient& xpud, PodOwnersCache& pods, const CardState& cards)
      : pods_(pods),
        cards_(cards),
        get_metrics_([&xpud] { return fetch(xpud); }, kShareMetricsFor) {}

  // Thread-safe; bounded by the xpud call timeout plus the pod-resources deadline, however many
  // scrapes run at once (they share one GetMetrics and one List). The body is built again only
  // when the sample, the pod map or the cards' generation changed since the last one (see
  // MetricsBodyCache); otherwise the same bytes are returned, followed by this scrape's own
  // xpu_exporter_scrape_duration_seconds.
  MetricsBody scrape_body();

  // The `/` page from the same inputs, under the same bounds.
  std::string status_page();

 private:
  // What one trip to xpud brings: GetMetrics, then GetProcesses and ListInstances when xpud
  // answered the first (a hung xpud costs one call timeout, not three). Immutable once made, and
  // shared: its address tells a scrape whether the sample is the one the cached body was built
  // from.
  struct XpudSample {
    xpu::Result<xpu::MetricsSnapshot> metrics;
    std::optional<xpu::ProcessSnapshot> processes;
    std::vector<xpu::CxpuInstanceInfo> instances{};  // empty also when xpud makes none
  };
  using SharedSample = std::shared_ptr<const XpudSample>;
  static SharedSample fetch(xpu::XpudClient& xpud);

  static ScrapeInputs inputs_from(const XpudSample& sample, const PodOwnersCache::Owners& owners,
                                  xpu::DeviceView view, double scrape_duration_seconds);
  ScrapeInputs gather();

  PodOwnersCache& pods_;
  const CardState& cards_;
  SingleFlight<SharedSample> get_metrics_;
  MetricsBodyCache bodies_;
};

}  // namespace shim::exporter
