// One scrape's worth of Prometheus text from plain inputs: xpud's metrics snapshot, the device
// view (identity and health), and the pod map. No I/O here, so every rule is unit-tested.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/metric_family.h>

#include "common/xpud_types.h"
#include "k8s-shim/exporter/pod_map.h"

namespace shim::exporter {

inline constexpr std::string_view kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

// Per card, the processes using the most memory get a series; the rest only count in
// xpu_processes. Bounds the series a runaway launcher could create.
inline constexpr std::size_t kMaxProcessSeriesPerCard = 16;
// Per card, at most this many memory shares (cXPU instances) get their pair of series.
inline constexpr std::size_t kMaxShareSeriesPerCard = 64;

struct ScrapeInputs {
  std::optional<xpu::MetricsSnapshot> metrics;  // nullopt: xpud did not answer GetMetrics
  // nullopt: xpud did not answer GetProcesses (down, or older than the method).
  std::optional<xpu::ProcessSnapshot> processes;
  // The cXPU instances xpud made (memory shares: Manager.ListInstances); empty when it made none
  // or did not answer.
  std::vector<xpu::CxpuInstanceInfo> instances;
  // Identity and health of each card: the process's CardState, so past the grace period every
  // card is unhealthy with the reason kind xpud_unreachable.
  xpu::DeviceView view;
  bool podresources_up = false;        // the last List answered
  PodMap pods;                         // empty when !podresources_up
  std::set<std::string> shared_cards;  // cards listed for several containers
  double scrape_duration_seconds = 0;
};

// A card a scrape shows: identity and health from the view, readings from xpud's snapshot.
struct ShownCard {
  const xpu::DeviceInfo* device = nullptr;
  const xpu::DeviceMetrics* metrics = nullptr;  // null: xpud did not answer, no readings
};

// The cards a scrape (and the `/` page) shows, by index, each once. While xpud answers, those in
// both its snapshot and the view (a card xpud just added may miss from the view for one scrape).
// When it did not answer, every card of the view, without readings: their health is the view's,
// the last xpud reported during the grace period and unhealthy past it, as the device plugin and
// the DRA driver have it. A reading is never repeated from an older answer.
std::vector<ShownCard> shown_cards(const ScrapeInputs& inputs);

// Per-device families for shown_cards; a metric xpud left out stays out; a family without samples
// is omitted. The exporter's own four families are always present.
std::vector<prometheus::MetricFamily> build_families(const ScrapeInputs& inputs);

// build_families without its last family, the scrape's own duration: everything that depends
// only on xpud's sample, the pod map and the device view, so a body made of it can be kept and
// served again while those stay the same (MetricsBodyCache).
std::vector<prometheus::MetricFamily> build_state_families(const ScrapeInputs& inputs);

// xpu_exporter_scrape_duration_seconds, the last family of a body and the one that differs
// from scrape to scrape: rendered alone, it is appended to a kept body.
prometheus::MetricFamily scrape_duration_family(double seconds);

std::string render_text(const std::vector<prometheus::MetricFamily>& families);

}  // namespace shim::exporter
