#include "k8s-shim/exporter/metrics_body_cache.h"

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s-shim/exporter/metrics_renderer.h"
#include "k8s-shim/exporter/pod_owners_cache.h"
#include "tests/k8s-shim/exporter/pod_resources_replies.h"

namespace shim::exporter {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

// What the scraper caches on: an immutable sample, the pod cache's owners object, the view.
struct Sample {
  xpu::MetricsSnapshot metrics;
};

std::shared_ptr<const Sample> sample_with_temperature(double celsius) {
  auto sample = std::make_shared<Sample>();
  sample->metrics.devices.push_back({0, {{"temperature_celsius", celsius}}});
  return sample;
}

xpu::DeviceView one_card(bool healthy) {
  xpu::DeviceView view;
  view.xpud_present = true;
  view.manager.driver_version = "4.0.25";
  xpu::DeviceInfo card;
  card.index = 0;
  card.uuid = "uuid-0";
  card.model = "R200";
  card.pci_bus_id = "0000:30:00.0";
  card.healthy = healthy;
  view.devices.push_back(card);
  return view;
}

v1::ListPodResourcesResponse pod_holding_card(const std::string& pod) {
  return test::one_pod_holding(pod, "uuid-0");
}

// Builds the body the way the scraper does, counting the builds itself too.
struct Renderer {
  int calls = 0;
  std::string operator()(const Sample& sample, const PodOwnersCache::Owners& owners,
                         const xpu::DeviceView& view) {
    ++calls;
    ScrapeInputs inputs;
    inputs.metrics = sample.metrics;
    inputs.view = view;
    inputs.podresources_up = owners.up;
    inputs.pods = owners.pods;
    return render_text(build_families(inputs));
  }
};

TEST(MetricsBodyCache, UnchangedInputsServeTheSameBytesWithoutBuildingAgain) {
  MetricsBodyCache cache;
  Renderer render;
  auto sample = sample_with_temperature(45);
  auto owners = std::make_shared<const PodOwnersCache::Owners>();
  const auto view = one_card(true);
  auto build = [&] { return render(*sample, *owners, view); };

  auto first = cache.get({sample, owners, 1}, build);
  auto second = cache.get({sample, owners, 1}, build);
  EXPECT_EQ(first, second);  // the very same bytes, not an equal copy
  EXPECT_THAT(*first, HasSubstr("\nxpu_temperature_celsius{"));
  EXPECT_EQ(render.calls, 1);
  EXPECT_EQ(cache.builds(), 1u);
}

TEST(MetricsBodyCache, NewSampleGivesANewBody) {
  MetricsBodyCache cache;
  Renderer render;
  auto owners = std::make_shared<const PodOwnersCache::Owners>();
  const auto view = one_card(true);
  auto older = sample_with_temperature(45);
  auto newer = sample_with_temperature(46);

  auto before = cache.get({older, owners, 1}, [&] { return render(*older, *owners, view); });
  auto after = cache.get({newer, owners, 1}, [&] { return render(*newer, *owners, view); });
  EXPECT_THAT(*before, HasSubstr("} 45\n"));
  EXPECT_THAT(*after, HasSubstr("} 46\n"));
  EXPECT_THAT(*after, Not(HasSubstr("} 45\n")));
  EXPECT_EQ(cache.builds(), 2u);
}

TEST(MetricsBodyCache, ViewChangeGivesANewBody) {
  MetricsBodyCache cache;
  Renderer render;
  auto sample = sample_with_temperature(45);
  auto owners = std::make_shared<const PodOwnersCache::Owners>();

  auto healthy =
      cache.get({sample, owners, 1}, [&] { return render(*sample, *owners, one_card(true)); });
  // The watcher reported a change (the card became Unhealthy): the generation moved on.
  auto unhealthy =
      cache.get({sample, owners, 2}, [&] { return render(*sample, *owners, one_card(false)); });
  const std::string series =
      "\nxpu_healthy{xpu=\"0\",uuid=\"uuid-0\",model=\"R200\",pci_bus_id=\"0000:30:00.0\"} ";
  EXPECT_THAT(*healthy, HasSubstr(series + "1\n"));
  EXPECT_THAT(*unhealthy, HasSubstr(series + "0\n"));
  EXPECT_EQ(cache.builds(), 2u);
}

// The pod cache keeps its object while List answers the same, so the body is not built again
// every time the pod map is refreshed; a different answer is a new object and a new body.
TEST(MetricsBodyCache, PodMapRefreshedUnchangedKeepsTheBodyChangedGivesANewOne) {
  std::vector<v1::ListPodResourcesResponse> replies = {
      pod_holding_card("demo"), pod_holding_card("demo"), pod_holding_card("later")};
  size_t lists = 0;
  PodOwnersCache pods(
      [&]() -> xpu::Result<v1::ListPodResourcesResponse> {
        return replies.at(std::min(lists++, replies.size() - 1));
      },
      2000ms);
  const auto t0 = PodOwnersCache::Clock::time_point{} + 1h;
  MetricsBodyCache cache;
  Renderer render;
  auto sample = sample_with_temperature(45);
  const auto view = one_card(true);
  auto scrape = [&](PodOwnersCache::Clock::time_point now) {
    auto owners = pods.get_shared(now);
    return cache.get({sample, owners, 1}, [&] { return render(*sample, *owners, view); });
  };

  auto first = scrape(t0);
  auto refreshed = scrape(t0 + 2s);  // List asked again, same answer
  EXPECT_EQ(lists, 2u);
  EXPECT_EQ(first, refreshed);
  EXPECT_THAT(*first, HasSubstr("pod=\"demo\""));
  EXPECT_EQ(cache.builds(), 1u);

  auto moved = scrape(t0 + 4s);  // the card went to another pod
  EXPECT_EQ(lists, 3u);
  EXPECT_THAT(*moved, HasSubstr("pod=\"later\""));
  EXPECT_THAT(*moved, Not(HasSubstr("pod=\"demo\"")));
  EXPECT_EQ(cache.builds(), 2u);
}

TEST(MetricsBodyCache, ScrapesArrivingTogetherBuildOnce) {
  MetricsBodyCache cache;
  std::atomic<int> builds = 0;
  auto sample = sample_with_temperature(45);
  auto owners = std::make_shared<const PodOwnersCache::Owners>();
  std::vector<MetricsBodyCache::Body> bodies(4);
  std::vector<std::thread> scrapes;
  for (size_t i = 0; i < bodies.size(); ++i)
    scrapes.emplace_back([&, i] {
      bodies[i] = cache.get({sample, owners, 1}, [&] {
        ++builds;
        return std::string("xpu_exporter_xpud_up 1\n");
      });
    });
  for (auto& scrape : scrapes) scrape.join();
  EXPECT_EQ(builds, 1);
  for (const auto& body : bodies) EXPECT_EQ(body, bodies[0]);
}

TEST(MetricsBodyCache, FailedBuildIsNotRememberedAndReachesTheCaller) {
  MetricsBodyCache cache;
  auto sample = sample_with_temperature(45);
  auto owners = std::make_shared<const PodOwnersCache::Owners>();
  EXPECT_THROW(cache.get({sample, owners, 1}, []() -> std::string { throw std::bad_alloc(); }),
               std::bad_alloc);
  EXPECT_EQ(cache.builds(), 0u);
  auto body = cache.get({sample, owners, 1}, [] { return std::string("built\n"); });
  EXPECT_EQ(*body, "built\n");
  EXPECT_EQ(cache.builds(), 1u);
}

// A kept body followed by a scrape's own duration is, byte for byte, the body a scrape built
// whole would be: the families, their order and the number formatting are the same.
TEST(MetricsBody, KeptPartAndDurationTailMakeTheWholeBody) {
  ScrapeInputs inputs;
  inputs.metrics = sample_with_temperature(45.5)->metrics;
  inputs.view = one_card(false);
  inputs.podresources_up = true;
  inputs.pods = {{"uuid-0", {"default", "demo", "main"}}};
  for (double seconds : {0.0, 0.000123456789, 0.4181, 12.5}) {
    inputs.scrape_duration_seconds = seconds;
    EXPECT_EQ(
        render_text(build_families(inputs)),
        render_text(build_state_families(inputs)) + render_text({scrape_duration_family(seconds)}))
        << seconds;
  }
}

}  // namespace
}  // namespace shim::exporter
