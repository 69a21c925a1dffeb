#include "k8s-shim/exporter/scraper.h"

#include <spdlog/spdlog.h>

#include "k8s-shim/exporter/metrics_renderer.h"
#include "k8s-shim/exporter/status_page.h"

namespace shim::exporter {

Scraper::XpudSample Scraper::fetch(xpu::XpudClient& xpud) {
  XpudSample sample{xpud.get_metrics(), std::nullopt};
  if (!sample.metrics) return sample;
  auto processes = xpud.get_processes();
  if (processes)
    sample.processes = std::move(*processes);
  else
    spdlog::debug("scrape: {}", processes.error());
  return sample;
}

ScrapeInputs Scraper::gather() {
  const auto started = std::chrono::steady_clock::now();
  ScrapeInputs inputs;
  auto sample = get_metrics_.run();
  if (sample.metrics) {
    inputs.metrics = std::move(*sample.metrics);
    inputs.processes = std::move(sample.processes);
  } else {
    spdlog::debug("scrape: {}", sample.metrics.error());
  }
  inputs.view = xpud_.current_view();
  auto owners = pods_.get(started);
  inputs.podresources_up = owners.up;
  inputs.pods = std::move(owners.pods);
  inputs.shared_cards = std::move(owners.shared_cards);
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
