// One scrape: xpud's GetMetrics, the watcher's device view and the cached pod map, rendered as
// Prometheus text for /metrics or as the HTML page for /.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "common/xpud_client.h"
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
      : xpud_(xpud),
        pods_(pods),
        get_metrics_([&xpud] { return fetch(xpud); }, kShareMetricsFor) {}

  // Thread-safe; bounded by the xpud call timeout plus the pod-resources deadline, however many
  // scrapes run at once (they share one GetMetrics and one List).
  std::string scrape();

  // The `/` page from the same inputs, under the same bounds.
  std::string status_page();

 private:
  // What one trip to xpud brings: GetMetrics, then GetProcesses when xpud answered the first
  // (a hung xpud costs one call timeout, not two).
  struct XpudSample {
    xpu::Result<xpu::MetricsSnapshot> metrics;
    std::optional<xpu::ProcessSnapshot> processes;
  };
  static XpudSample fetch(xpu::XpudClient& xpud);

  ScrapeInputs gather();

  xpu::XpudClient& xpud_;
  PodOwnersCache& pods_;
  SingleFlight<XpudSample> get_metrics_;
};

}  // namespace shim::exporter
