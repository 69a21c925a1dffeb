#include "k8s-shim/exporter/scraper.h"

#include <malloc.h>

#include <spdlog/spdlog.h>

#include "k8s-shim/exporter/metrics_renderer.h"
#include "k8s-shim/exporter/status_page.h"

namespace shim::exporter {
namespace {

double seconds_since(std::chrono::steady_clock::time_point started) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

}  // namespace

Scraper::SharedSample Scraper::fetch(xpu::XpudClient& xpud) {
  auto sample = std::make_shared<XpudSample>(XpudSample{xpud.get_metrics(), std::nullopt});
  if (!sample->metrics) {
    spdlog::debug("scrape: {}", sample->metrics.error());
    return sample;
  }
  auto processes = xpud.get_processes();
  if (processes)
    sample->processes = std::move(*processes);
  else
    spdlog::debug("scrape: {}", processes.error());
  auto instances = xpud.list_instances();
  if (instances)
    sample->instances = std::move(*instances);
  else
    spdlog::debug("scrape: {}", instances.error());
  return sample;
}

ScrapeInputs Scraper::inputs_from(const XpudSample& sample, const PodOwnersCache::Owners& owners,
                                  xpu::DeviceView view, double scrape_duration_seconds) {
  ScrapeInputs inputs;
  if (sample.metrics) {
    inputs.metrics = *sample.metrics;
    inputs.processes = sample.processes;
    inputs.instances = sample.instances;
  }
  inputs.view = std::move(view);
  inputs.podresources_up = owners.up;
  inputs.pods = owners.pods;
  inputs.shared_cards = owners.shared_cards;
  inputs.scrape_duration_seconds = scrape_duration_seconds;
  return inputs;
}

ScrapeInputs Scraper::gather() {
  const auto started = std::chrono::steady_clock::now();
  auto sample = get_metrics_.run();
  // The cards as of the answer (or the call's timeout), not as of the scrape's start.
  auto cards = cards_.at(std::chrono::steady_clock::now());
  auto owners = pods_.get_shared(started);
  return inputs_from(*sample, *owners, *cards.view, seconds_since(started));
}

MetricsBody Scraper::scrape_body() {
  const auto started = std::chrono::steady_clock::now();
  auto sample = get_metrics_.run();
  // The cards as of the answer (or the call's timeout), not as of the scrape's start. The body is
  // built from exactly this view, and so kept under its generation.
  const auto cards = cards_.at(std::chrono::steady_clock::now());
  auto owners = pods_.get_shared(started);
  // This scrape's own time collecting (a cached body is served with it too: a scrape that sat
  // out a List deadline says so, whether or not the pod map changed).
  const double collected_in = seconds_since(started);
  auto kept = bodies_.get({sample, owners, cards.generation}, [&] {
    std::string body =
        render_text(build_state_families(inputs_from(*sample, *owners, *cards.view, collected_in)));
    // Building makes and frees many small blocks (the families, then the text's growing
    // buffer); glibc keeps freed pages in the heap unless they sit at its top, so give them
    // back now rather than carry them until the next build. The trim runs at most once a second
    // outside of a burst of health changes; what it saves and costs: bench/RESULTS.md,
    // "Exporter: malloc_trim after each build".
    ::malloc_trim(0);
    return body;
  });
  return MetricsBody{std::move(kept), render_text({scrape_duration_family(collected_in)})};
}

std::string Scraper::status_page() {
  StatusPageOptions options;
  options.generated = std::chrono::system_clock::now();
  return render_status_page(gather(), options);
}

}  // namespace shim::exporter
