// What building one /metrics body costs, split into its two steps: the families (our code, the
// prometheus-cpp model) and prometheus-cpp's text serialiser, for 8 and 64 cards shaped like the
// sim backend's (every metric present, every other card held by a pod). bench/run reports it
// beside the cost of serving a cached body.
// Run: build-bench/tests/k8s-shim/exporter/exporter_render_bench
#include <benchmark/benchmark.h>

#include <cstdio>

#include "k8s-shim/exporter/metrics_renderer.h"

namespace shim::exporter {
namespace {

ScrapeInputs cards_like_the_sim(unsigned count) {
  ScrapeInputs inputs;
  inputs.view.xpud_present = true;
  inputs.view.manager.driver_version = "5.0.21.16";
  xpu::MetricsSnapshot snapshot;
  snapshot.timestamp_usec = 1'700'000'000'000'000;
  for (unsigned i = 0; i < count; ++i) {
    xpu::DeviceInfo card;
    card.index = i;
    card.name = "xpu" + std::to_string(i);
    char uuid[48];
    std::snprintf(uuid, sizeof uuid, "6d2f1c3a-%04x-4222-8333-4444%08x", i, i * 2654435761u);
    card.uuid = uuid;
    card.serial = "SIM" + std::to_string(100000 + i);
    card.model = "R200";
    char pci[24];
    std::snprintf(pci, sizeof pci, "0000:%02x:00.0", 0x10 + i);
    card.pci_bus_id = pci;
    card.healthy = i % 7 != 3;
    card.health_transitions = {{"Healthy", 1 + i % 3}, {"Unhealthy", i % 3}};
    inputs.view.devices.push_back(card);
    snapshot.devices.push_back({i,
                                {{"utilization_ratio", 0.37 + i * 0.001},
                                 {"memory_utilization_ratio", 0.21},
                                 {"memory_used_bytes", 12884901888.0 + i * 4096},
                                 {"memory_total_bytes", 34359738368.0},
                                 {"l3_memory_used_bytes", 33554432},
                                 {"l3_memory_total_bytes", 67108864},
                                 {"temperature_celsius", 48 + i % 9},
                                 {"power_watts", 83.5 + i % 11},
                                 {"clock_hertz", 1.2e9},
                                 {"process_count", static_cast<double>(i % 3)}}});
    if (i % 2 == 0) inputs.pods[card.uuid] = {"bench", "job-" + std::to_string(i / 2), "main"};
  }
  inputs.metrics = std::move(snapshot);
  inputs.podresources_up = true;
  inputs.scrape_duration_seconds = 0.0021;
  return inputs;
}

void BM_BuildFamilies(benchmark::State& state) {
  const auto inputs = cards_like_the_sim(static_cast<unsigned>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(build_families(inputs));
}

void BM_SerialiseText(benchmark::State& state) {
  const auto families = build_families(cards_like_the_sim(static_cast<unsigned>(state.range(0))));
  size_t bytes = 0;
  for (auto _ : state) {
    auto text = render_text(families);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["body_bytes"] = static_cast<double>(bytes);
}

void BM_BuildBody(benchmark::State& state) {
  const auto inputs = cards_like_the_sim(static_cast<unsigned>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(render_text(build_families(inputs)));
}

BENCHMARK(BM_BuildFamilies)->Arg(8)->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SerialiseText)->Arg(8)->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BuildBody)->Arg(8)->Arg(64)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace shim::exporter

BENCHMARK_MAIN();
