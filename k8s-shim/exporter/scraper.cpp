#include "k8s-shim/exporter/scraper.h"

#include <spdlog/spdlog.h>

#include "k8s-shim/exporter/metrics_renderer.h"
#include "k8s-shim/exporter/status_page.h"

namespace shim::exporter {

ScrapeInputs Scraper::gather() {
  const auto started = std::chrono::steady_clock::now();
  ScrapeInputs inputs;
  auto metrics = get_metrics_.run();
  if (metrics) {
    inputs.metrics = std::move(*metrics);
  } else {
    spdlog::debug("scrape: {}", metrics.error());
  }
  inputs.view = xpud_.current_view();
  auto owners = pods_.get(started);
  inputs.podresources_up = owners.up;
  inputs.pods = std::move(owners.pods);
  inputs.scrape_duration_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return inputs;
}

std::string Scraper::scrape() { return render_text(build_families(gather())); }

std::string Scraper::status_page() {
  StatusPageOptions options;
  options.generated = std::chrono::system_clock::now();
  return render_status_page(gather(), options);
}

}  // namespace shim::exporter
