#include "k8s-shim/exporter/metrics_renderer.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s-shim/cards/card_state.h"
#include "tests/support/card_builder.h"

namespace shim::exporter {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using namespace std::chrono_literals;

using xpu::test::card;

ScrapeInputs two_cards() {
  ScrapeInputs inputs;
  inputs.view.xpud_present = true;
  inputs.view.manager.driver_version = "4.0.25";
  inputs.view.devices = {card(0).serial("SN00").pci_bus_id("0000:30:00.0"),
                         card(1).serial("SN01").pci_bus_id("0000:31:00.0").unhealthy()};
  xpu::MetricsSnapshot snapshot;
  snapshot.timestamp_usec = 1'700'000'000'000'000;
  snapshot.devices.push_back({0,
                              {{"utilization_ratio", 0.5},
                               {"memory_utilization_ratio", 0.25},
                               {"memory_used_bytes", 1024},
                               {"memory_total_bytes", 34359738368.0},
                               {"l3_memory_used_bytes", 2048},
                               {"l3_memory_total_bytes", 67108864},
                               {"temperature_celsius", 45},
                               {"power_watts", 81.5},
                               {"clock_hertz", 1.2e9},
                               {"process_count", 2},
                               {"pcie_link_speed_transfers_per_second", 8e9},
                               {"pcie_link_max_speed_transfers_per_second", 16e9},
                               {"pcie_link_width_lanes", 16},
                               {"pcie_link_max_width_lanes", 16},
                               {"pcie_aer_correctable_errors", 12},
                               {"pcie_aer_nonfatal_errors", 1},
                               {"pcie_aer_fatal_errors", 0}}});
  // Card 1's backend cannot read power or temperature.
  snapshot.devices.push_back({1, {{"utilization_ratio", 0}, {"memory_used_bytes", 4096}}});
  inputs.metrics = snapshot;
  inputs.podresources_up = true;
  inputs.pods = {{"uuid-1", {"default", "demo", "main"}}};
  inputs.scrape_duration_seconds = 0.25;
  // Card 0: a host process. Card 1 (held by default/demo/main): the container's process and a
  // host tool that opened the card too.
  xpu::ProcessSnapshot processes;
  processes.timestamp_usec = snapshot.timestamp_usec;
  processes.devices.push_back({0, {{4100, 1024, "", ""}}});
  processes.devices.push_back(
      {1,
       {{4242, 3072, "6f2b1c3a-1111-4222-8333-444455556666", std::string(64, 'c')},
        {4300, 1024, "", ""}}});
  inputs.processes = processes;
  return inputs;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> samples_of(const std::string& text, const std::string& family) {
  std::vector<std::string> out;
  for (const auto& line : lines(text))
    if (line.rfind(family + "{", 0) == 0 || line.rfind(family + " ", 0) == 0) out.push_back(line);
  return out;
}

constexpr const char* kCard0 = R"(xpu="0",uuid="uuid-0",model="R200",pci_bus_id="0000:30:00.0")";
constexpr const char* kCard1 =
    R"(xpu="1",uuid="uuid-1",model="R200",pci_bus_id="0000:31:00.0",namespace="default",pod="demo",container="main")";

TEST(MetricsRenderer, EveryFamilyWithIdentityLabelsAndValuesInBaseUnits) {
  std::string text = render_text(build_families(two_cards()));

  EXPECT_THAT(
      samples_of(text, "xpu_info"),
      ::testing::ElementsAre(
          std::string("xpu_info{") + kCard0 + R"(,serial="SN00",driver_version="4.0.25"} 1)",
          std::string("xpu_info{") + kCard1 + R"(,serial="SN01",driver_version="4.0.25"} 1)"));
  EXPECT_THAT(samples_of(text, "xpu_healthy"),
              ::testing::ElementsAre(std::string("xpu_healthy{") + kCard0 + "} 1",
                                     std::string("xpu_healthy{") + kCard1 + "} 0"));
  EXPECT_THAT(samples_of(text, "xpu_memory_used_bytes"),
              ::testing::ElementsAre(std::string("xpu_memory_used_bytes{") + kCard0 + "} 1024",
                                     std::string("xpu_memory_used_bytes{") + kCard1 + "} 4096"));
  const std::string card0 = std::string("{") + kCard0 + "} ";
  EXPECT_THAT(samples_of(text, "xpu_utilization_ratio"),
              Contains("xpu_utilization_ratio" + card0 + "0.5"));
  EXPECT_THAT(samples_of(text, "xpu_memory_utilization_ratio"),
              ::testing::ElementsAre("xpu_memory_utilization_ratio" + card0 + "0.25"));
  EXPECT_THAT(samples_of(text, "xpu_memory_total_bytes"),
              ::testing::ElementsAre("xpu_memory_total_bytes" + card0 + "34359738368"));
  EXPECT_THAT(samples_of(text, "xpu_l3_memory_used_bytes"),
              ::testing::ElementsAre("xpu_l3_memory_used_bytes" + card0 + "2048"));
  EXPECT_THAT(samples_of(text, "xpu_l3_memory_total_bytes"),
              ::testing::ElementsAre("xpu_l3_memory_total_bytes" + card0 + "67108864"));
  EXPECT_THAT(samples_of(text, "xpu_temperature_celsius"),
              ::testing::ElementsAre("xpu_temperature_celsius" + card0 + "45"));
  EXPECT_THAT(samples_of(text, "xpu_power_watts"),
              ::testing::ElementsAre("xpu_power_watts" + card0 + "81.5"));
  EXPECT_THAT(samples_of(text, "xpu_clock_hertz"),
              ::testing::ElementsAre("xpu_clock_hertz" + card0 + "1200000000"));
  EXPECT_THAT(samples_of(text, "xpu_processes"),
              ::testing::ElementsAre("xpu_processes" + card0 + "2"));

  EXPECT_THAT(samples_of(text, "xpu_exporter_xpud_up"),
              ::testing::ElementsAre("xpu_exporter_xpud_up 1"));
  EXPECT_THAT(samples_of(text, "xpu_exporter_podresources_up"),
              ::testing::ElementsAre("xpu_exporter_podresources_up 1"));
  EXPECT_THAT(samples_of(text, "xpu_exporter_scrape_duration_seconds"),
              ::testing::ElementsAre("xpu_exporter_scrape_duration_seconds 0.25"));
}

TEST(MetricsRenderer, EveryFamilyHasHelpAndGaugeType) {
  std::string text = render_text(build_families(two_cards()));
  for (const char* family :
       {"xpu_info", "xpu_healthy", "xpu_utilization_ratio", "xpu_memory_utilization_ratio",
        "xpu_memory_used_bytes", "xpu_memory_total_bytes", "xpu_l3_memory_used_bytes",
        "xpu_l3_memory_total_bytes", "xpu_temperature_celsius", "xpu_power_watts",
        "xpu_clock_hertz", "xpu_processes", "xpu_process_memory_used_bytes", "xpu_exporter_xpud_up",
        "xpu_exporter_podresources_up", "xpu_exporter_scrape_duration_seconds"}) {
    EXPECT_THAT(text, HasSubstr(std::string("# HELP ") + family + " ")) << family;
    EXPECT_THAT(text, HasSubstr(std::string("# TYPE ") + family + " gauge\n")) << family;
  }
}

TEST(MetricsRenderer, HealthHistoryAndReasonCarryTheCardsIdentityOnly) {
  auto inputs = two_cards();
  inputs.view.devices[0].health_transitions = {{"Healthy", 3}, {"Unhealthy", 3}};
  inputs.view.devices[1].health_transitions = {{"Healthy", 0}, {"Unhealthy", 1}, {"Sideways", 7}};
  inputs.view.devices[1].health_reason_kind = "driver_fault";
  std::string text = render_text(build_families(inputs));
  EXPECT_THAT(text, HasSubstr("# TYPE xpu_health_transitions_total counter\n"));
  // No pod labels on a counter (card 1 is held by a pod): a pod coming or going must not start
  // a new series; and a word xpud does not define is not turned into a label value.
  EXPECT_THAT(samples_of(text, "xpu_health_transitions_total"),
              ::testing::ElementsAre(
                  R"(xpu_health_transitions_total{xpu="0",uuid="uuid-0",to="Healthy"} 3)",
                  R"(xpu_health_transitions_total{xpu="0",uuid="uuid-0",to="Unhealthy"} 3)",
                  R"(xpu_health_transitions_total{xpu="1",uuid="uuid-1",to="Healthy"} 0)",
                  R"(xpu_health_transitions_total{xpu="1",uuid="uuid-1",to="Unhealthy"} 1)"));
  // Only the Unhealthy card has a reason.
  EXPECT_THAT(samples_of(text, "xpu_health_reason_info"),
              ::testing::ElementsAre(
                  R"(xpu_health_reason_info{xpu="1",uuid="uuid-1",reason="driver_fault"} 1)"));

  // xpud's release check has a word of its own, kept as it is.
  inputs.view.devices[1].health_reason_kind = "memory_not_released";
  text = render_text(build_families(inputs));
  EXPECT_THAT(
      samples_of(text, "xpu_health_reason_info"),
      ::testing::ElementsAre(
          R"(xpu_health_reason_info{xpu="1",uuid="uuid-1",reason="memory_not_released"} 1)"));

  // A word this exporter does not know, or none (an older xpud), is "other": still bounded.
  for (const char* kind : {"cosmic_rays", ""}) {
    inputs.view.devices[1].health_reason_kind = kind;
    text = render_text(build_families(inputs));
    EXPECT_THAT(
        samples_of(text, "xpu_health_reason_info"),
        ::testing::ElementsAre(R"(xpu_health_reason_info{xpu="1",uuid="uuid-1",reason="other"} 1)"))
        << kind;
  }
}

TEST(MetricsRenderer, ResetsAreCountedByResultWithTheCardsIdentityOnly) {
  auto inputs = two_cards();
  // Card 1 (held by a pod) was reset and the reset did not cure it; xpud says so.
  inputs.view.devices[1].resets = {
      {"succeeded", 2}, {"failed", 1}, {"refused", 4}, {"exploded", 9}};
  inputs.view.devices[1].healthy = false;
  inputs.view.devices[1].health_reason_kind = "reset_failed";
  std::string text = render_text(build_families(inputs));
  EXPECT_THAT(text, HasSubstr("# TYPE xpu_resets_total counter\n"));
  EXPECT_THAT(text, HasSubstr("# HELP xpu_resets_total Resets of the XPU"));
  // No pod labels (a pod coming or going must not start a new series), no word xpud does not
  // define, and no series for a card whose xpud says nothing of resets (card 0, an older xpud).
  EXPECT_THAT(
      samples_of(text, "xpu_resets_total"),
      ::testing::ElementsAre(R"(xpu_resets_total{xpu="1",uuid="uuid-1",result="failed"} 1)",
                             R"(xpu_resets_total{xpu="1",uuid="uuid-1",result="refused"} 4)",
                             R"(xpu_resets_total{xpu="1",uuid="uuid-1",result="succeeded"} 2)"));
  EXPECT_THAT(samples_of(text, "xpu_health_reason_info"),
              ::testing::ElementsAre(
                  R"(xpu_health_reason_info{xpu="1",uuid="uuid-1",reason="reset_failed"} 1)"));
}

TEST(MetricsRenderer, BuildInfoIsAlwaysThere) {
  auto inputs = two_cards();
  inputs.metrics.reset();
  EXPECT_THAT(samples_of(render_text(build_families(inputs)), "xpu_exporter_build_info"),
              ::testing::ElementsAre(std::string("xpu_exporter_build_info{version=\"") +
                                     XPU_VERSION + "\"} 1"));
}

TEST(MetricsRenderer, MetricXpudLeftOutIsLeftOut) {
  std::string text = render_text(build_families(two_cards()));
  // Card 1 reported no power: no series for it, and no zero.
  for (const auto& line : samples_of(text, "xpu_power_watts"))
    EXPECT_THAT(line, Not(HasSubstr(R"(xpu="1")")));

  auto inputs = two_cards();
  inputs.metrics->devices[0].values.erase("power_watts");
  text = render_text(build_families(inputs));
  EXPECT_THAT(samples_of(text, "xpu_power_watts"), IsEmpty());
  EXPECT_THAT(text, Not(HasSubstr("xpu_power_watts")));  // no empty family either
}

TEST(MetricsRenderer, UnallocatedCardHasNoPodLabels) {
  auto inputs = two_cards();
  std::string text = render_text(build_families(inputs));
  for (const auto& line : samples_of(text, "xpu_healthy"))
    if (line.find(R"(xpu="0")") != std::string::npos) {
      EXPECT_THAT(line, Not(HasSubstr("pod=")));
    }

  inputs.podresources_up = false;
  inputs.pods.clear();
  text = render_text(build_families(inputs));
  EXPECT_THAT(text, Not(HasSubstr("pod=")));
  EXPECT_THAT(samples_of(text, "xpu_exporter_podresources_up"),
              ::testing::ElementsAre("xpu_exporter_podresources_up 0"));
}

// xpud did not answer this scrape: no readings (none is repeated from an older answer), but
// every card of the view keeps its identity and the health the view gives it.
TEST(MetricsRenderer, XpudDownKeepsEachCardsIdentityAndHealthButNoReadings) {
  auto inputs = two_cards();
  inputs.metrics.reset();
  inputs.processes.reset();
  std::string text = render_text(build_families(inputs));
  EXPECT_THAT(samples_of(text, "xpu_exporter_xpud_up"),
              ::testing::ElementsAre("xpu_exporter_xpud_up 0"));
  EXPECT_THAT(samples_of(text, "xpu_healthy"),
              ::testing::ElementsAre(std::string("xpu_healthy{") + kCard0 + "} 1",
                                     std::string("xpu_healthy{") + kCard1 + "} 0"));
  EXPECT_EQ(samples_of(text, "xpu_info").size(), 2u);
  EXPECT_EQ(samples_of(text, "xpu_health_reason_info").size(), 1u);
  for (const auto& line : lines(text)) {
    if (line.starts_with("#")) continue;
    EXPECT_TRUE(line.starts_with("xpu_exporter_") || line.starts_with("xpu_info{") ||
                line.starts_with("xpu_healthy{") || line.starts_with("xpu_health_reason_info{"))
        << line;
  }
}

// The view is the CardState's: during the grace period the cards keep the health xpud last
// reported, past it every card is unhealthy with the reason kind the device plugin and the DRA
// driver then use.
TEST(MetricsRenderer, PastTheGracePeriodEveryCardIsUnhealthyBecauseXpudIsUnreachable) {
  auto inputs = two_cards();
  inputs.metrics.reset();
  inputs.processes.reset();
  const auto gone = CardState::Clock::time_point{} + 1h;
  CardState cards(10s, gone);
  cards.update(xpu::test::absent(inputs.view.devices), gone);

  inputs.view = *cards.at(gone + 9s).view;
  std::string text = render_text(build_families(inputs));
  EXPECT_THAT(samples_of(text, "xpu_healthy"),
              ::testing::ElementsAre(std::string("xpu_healthy{") + kCard0 + "} 1",
                                     std::string("xpu_healthy{") + kCard1 + "} 0"));

  inputs.view = *cards.at(gone + 10s).view;
  text = render_text(build_families(inputs));
  EXPECT_THAT(samples_of(text, "xpu_healthy"),
              ::testing::ElementsAre(std::string("xpu_healthy{") + kCard0 + "} 0",
                                     std::string("xpu_healthy{") + kCard1 + "} 0"));
  EXPECT_THAT(samples_of(text, "xpu_health_reason_info"),
              ::testing::ElementsAre(
                  R"(xpu_health_reason_info{xpu="0",uuid="uuid-0",reason="xpud_unreachable"} 1)",
                  R"(xpu_health_reason_info{xpu="1",uuid="uuid-1",reason="xpud_unreachable"} 1)"));
  EXPECT_THAT(samples_of(text, "xpu_exporter_xpud_up"),
              ::testing::ElementsAre("xpu_exporter_xpud_up 0"));
}

TEST(MetricsRenderer, CardsMissingFromTheViewAreSkippedAndRepeatsDropped) {
  auto inputs = two_cards();
  inputs.view.devices.pop_back();  // xpud added card 1 but the watcher has not seen it yet
  inputs.metrics->devices.push_back({0, {{"memory_used_bytes", 9999}}});  // repeated index
  std::string text = render_text(build_families(inputs));
  EXPECT_THAT(samples_of(text, "xpu_memory_used_bytes"),
              ::testing::ElementsAre(std::string("xpu_memory_used_bytes{") + kCard0 + "} 1024"));
  EXPECT_THAT(text, Not(HasSubstr(R"(xpu="1")")));
}

// No pod gets a PF with SR-IOV on, but it is still the card its VFs run on: operators watch its
// temperature, power and health like any other.
TEST(MetricsRenderer, APhysicalFunctionWithSriovOnIsStillReported) {
  auto inputs = two_cards();
  inputs.view.devices[0].sriov_enabled = true;
  std::string text = render_text(build_families(inputs));
  EXPECT_THAT(samples_of(text, "xpu_healthy"),
              Contains(std::string("xpu_healthy{") + kCard0 + "} 1"));
  EXPECT_THAT(samples_of(text, "xpu_temperature_celsius"),
              ::testing::ElementsAre(std::string("xpu_temperature_celsius{") + kCard0 + "} 45"));
}

TEST(MetricsRenderer, SeriesAreOrderedByIndex) {
  auto inputs = two_cards();
  std::swap(inputs.metrics->devices[0], inputs.metrics->devices[1]);
  std::swap(inputs.view.devices[0], inputs.view.devices[1]);
  auto samples = samples_of(render_text(build_families(inputs)), "xpu_memory_used_bytes");
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_THAT(samples[0], HasSubstr(R"(xpu="0")"));
  EXPECT_THAT(samples[1], HasSubstr(R"(xpu="1")"));
}

TEST(MetricsRenderer, LabelValuesAreEscaped) {
  auto inputs = two_cards();
  inputs.view.devices[0].serial = "a\"b\\c\nd";
  std::string text = render_text(build_families(inputs));
  EXPECT_THAT(text, HasSubstr(R"(serial="a\"b\\c\nd")"));
}

constexpr const char* kCard1Identity =
    R"(xpu="1",uuid="uuid-1",model="R200",pci_bus_id="0000:31:00.0")";

TEST(MetricsRenderer, ProcessMemoryNamesThePodOnlyForTheContainerOnAnOwnedCard) {
  std::string text = render_text(build_families(two_cards()));
  EXPECT_THAT(
      samples_of(text, "xpu_process_memory_used_bytes"),
      ::testing::ElementsAre(
          std::string("xpu_process_memory_used_bytes{") + kCard0 + R"(,pid="4100"} 1024)",
          std::string("xpu_process_memory_used_bytes{") + kCard1Identity +
              R"(,pid="4242",namespace="default",pod="demo",container="main"} 3072)",
          std::string("xpu_process_memory_used_bytes{") + kCard1Identity + R"(,pid="4300"} 1024)"));
}

TEST(MetricsRenderer, ProcessesOfACardListedForSeveralContainersNameNoPod) {
  auto inputs = two_cards();
  inputs.shared_cards = {"uuid-1"};
  std::string text = render_text(build_families(inputs));
  EXPECT_THAT(samples_of(text, "xpu_process_memory_used_bytes"),
              Contains(std::string("xpu_process_memory_used_bytes{") + kCard1Identity +
                       R"(,pid="4242"} 3072)"));
  EXPECT_THAT(text, Not(HasSubstr(R"(pid="4242",namespace)")));
}

TEST(MetricsRenderer, ProcessSeriesPerCardAreBoundedToTheLargest) {
  auto inputs = two_cards();
  inputs.processes->devices[0].processes.clear();
  for (unsigned i = 0; i < 40; ++i)  // pid 5000 + i uses i MiB; pid 5039 is listed twice
    inputs.processes->devices[0].processes.push_back({5000 + i, std::uint64_t{i} << 20, "", ""});
  inputs.processes->devices[0].processes.push_back({5039, std::uint64_t{39} << 20, "", ""});
  std::string text = render_text(build_families(inputs));
  std::vector<std::string> card0;
  for (const auto& line : samples_of(text, "xpu_process_memory_used_bytes"))
    if (line.find(R"(xpu="0")") != std::string::npos) card0.push_back(line);
  ASSERT_EQ(card0.size(), kMaxProcessSeriesPerCard);
  EXPECT_THAT(card0.front(), HasSubstr(R"(pid="5039"})"));
  EXPECT_THAT(card0.back(), HasSubstr(R"(pid="5024"})"));
  EXPECT_THAT(text, Not(HasSubstr(R"(pid="5023")")));
}

TEST(MetricsRenderer, EachShareShowsItsGrantBesideWhatItsContainerUses) {
  auto inputs = two_cards();
  const std::string other(64, 'a');
  inputs.processes->devices[1].processes.push_back({4500, 2048, "pod-b", other});
  inputs.processes->devices[1].processes.push_back({4501, 1024, "pod-b", other});
  inputs.instances = {{1, std::string(12, 'c'), 8ull << 30},
                      {1, std::string(12, 'a'), 4ull << 30, "team/b/main"},
                      {1, std::string(12, 'a'), 4ull << 30, "team/b/main"},  // twice: one series
                      {0, "idle00000000", 1ull << 30},
                      {7, "nocard000000", 1ull << 30}};  // a card not shown: no series
  std::string text = render_text(build_families(inputs));
  const std::string card0 = R"(xpu="0",uuid="uuid-0",instance=)";
  const std::string card1 = R"(xpu="1",uuid="uuid-1",instance=)";
  EXPECT_THAT(samples_of(text, "xpu_share_memory_limit_bytes"),
              ::testing::ElementsAre(
                  "xpu_share_memory_limit_bytes{" + card0 + R"("idle00000000"} 1073741824)",
                  "xpu_share_memory_limit_bytes{" + card1 +
                      R"("aaaaaaaaaaaa",namespace="team",pod="b",container="main"} 4294967296)",
                  "xpu_share_memory_limit_bytes{" + card1 + R"("cccccccccccc"} 8589934592)"));
  EXPECT_THAT(samples_of(text, "xpu_share_memory_used_bytes"),
              ::testing::ElementsAre(
                  "xpu_share_memory_used_bytes{" + card0 + R"("idle00000000"} 0)",
                  "xpu_share_memory_used_bytes{" + card1 +
                      R"("aaaaaaaaaaaa",namespace="team",pod="b",container="main"} 3072)",
                  "xpu_share_memory_used_bytes{" + card1 + R"("cccccccccccc"} 3072)"));

  // Each sharer's processes carry its pod, though the card is listed for several containers.
  EXPECT_THAT(samples_of(text, "xpu_process_memory_used_bytes"),
              Contains(std::string("xpu_process_memory_used_bytes{") + kCard1Identity +
                       R"(,pid="4500",namespace="team",pod="b",container="main"} 2048)"));
  inputs.shared_cards = {"uuid-1"};
  text = render_text(build_families(inputs));
  EXPECT_THAT(text, HasSubstr(R"(pid="4501",namespace="team",pod="b",container="main"} 1024)"));
  EXPECT_THAT(text, HasSubstr(R"(pid="4242"} 3072)"));  // its instance names no owner

  inputs.instances.clear();  // no shares (or an xpud without them): no share families
  text = render_text(build_families(inputs));
  EXPECT_THAT(text, Not(HasSubstr("xpu_share_memory")));
}

TEST(MetricsRenderer, NoProcessListNoProcessFamily) {
  auto inputs = two_cards();
  inputs.processes.reset();  // an xpud older than GetProcesses, or a backend without the list
  std::string text = render_text(build_families(inputs));
  EXPECT_THAT(text, Not(HasSubstr("xpu_process_memory_used_bytes")));
  EXPECT_THAT(samples_of(text, "xpu_processes"), Not(IsEmpty()));
}

// The first executable PROGRAM on PATH, or an empty path.
std::filesystem::path find_on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream directories(path ? path : "");
  for (std::string directory; std::getline(directories, directory, ':');) {
    auto candidate = std::filesystem::path(directory.empty() ? "." : directory) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

TEST(MetricsRenderer, PcieLinkFiguresAreGaugesAndAerCountsACounterPerSeverity) {
  const std::string text = render_text(build_families(two_cards()));
  const std::string card0 = std::string("{") + kCard0 + "} ";
  EXPECT_THAT(
      samples_of(text, "xpu_pcie_link_speed_transfers_per_second"),
      ::testing::ElementsAre("xpu_pcie_link_speed_transfers_per_second" + card0 + "8000000000"));
  EXPECT_THAT(samples_of(text, "xpu_pcie_link_max_speed_transfers_per_second"),
              ::testing::ElementsAre("xpu_pcie_link_max_speed_transfers_per_second" + card0 +
                                     "16000000000"));
  EXPECT_THAT(samples_of(text, "xpu_pcie_link_width_lanes"),
              ::testing::ElementsAre("xpu_pcie_link_width_lanes" + card0 + "16"));
  EXPECT_THAT(samples_of(text, "xpu_pcie_link_max_width_lanes"),
              ::testing::ElementsAre("xpu_pcie_link_max_width_lanes" + card0 + "16"));
  EXPECT_THAT(text, HasSubstr("# TYPE xpu_pcie_link_speed_transfers_per_second gauge\n"));
  // A counter with the card's identity only (a pod coming or going starts no new series); card
  // 1, whose backend reads no AER counts, has none.
  EXPECT_THAT(text, HasSubstr("# TYPE xpu_pcie_aer_errors_total counter\n"));
  EXPECT_THAT(samples_of(text, "xpu_pcie_aer_errors_total"),
              ::testing::ElementsAre(
                  R"(xpu_pcie_aer_errors_total{xpu="0",uuid="uuid-0",severity="correctable"} 12)",
                  R"(xpu_pcie_aer_errors_total{xpu="0",uuid="uuid-0",severity="nonfatal"} 1)",
                  R"(xpu_pcie_aer_errors_total{xpu="0",uuid="uuid-0",severity="fatal"} 0)"));
}

TEST(MetricsRenderer, PcieReasonKindsAreLabelsOfTheirOwn) {
  auto inputs = two_cards();
  for (const char* kind : {"pcie_fatal_error", "pcie_nonfatal_error", "pcie_link_downtrained"}) {
    inputs.view.devices[1].health_reason_kind = kind;
    EXPECT_THAT(samples_of(render_text(build_families(inputs)), "xpu_health_reason_info"),
                ::testing::ElementsAre(
                    std::string(R"(xpu_health_reason_info{xpu="1",uuid="uuid-1",reason=")") + kind +
                    R"("} 1)"));
  }
}

// The rendered text passes Prometheus' own linter. promtool is found on PATH: the test tier
// (scripts/install-deps.sh test) links it into /usr/local/bin from Debian's prometheus package
// without installing the package, whose service would start.
TEST(MetricsRenderer, PassesPromtoolCheckMetrics) {
  auto promtool = find_on_path("promtool");
  ASSERT_FALSE(promtool.empty()) << "promtool is required on PATH (scripts/install-deps.sh test)";
  auto path = std::filesystem::temp_directory_path() /
              ("xpu-render-" + std::to_string(::getpid()) + ".prom");
  {
    std::ofstream out(path);
    out << render_text(build_families(two_cards()));
  }
  std::string command = promtool.string() + " check metrics < " + path.string() + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[512];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  int status = ::pclose(pipe);
  std::filesystem::remove(path);
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output, "");
}

}  // namespace
}  // namespace shim::exporter
