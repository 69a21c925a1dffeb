#include "k8s-shim/exporter/status_page.h"

#include <cmath>
#include <limits>
#include <regex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/card_builder.h"

namespace shim::exporter {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr double kGiB = 1024.0 * 1024 * 1024;

using xpu::test::card;

ScrapeInputs three_cards() {
  ScrapeInputs inputs;
  inputs.view.xpud_present = true;
  inputs.view.manager.version = "1.2.0";
  inputs.view.manager.backend = "sim";
  inputs.view.manager.driver_version = "4.0.25";
  inputs.view.devices = {card(0).pci_bus_id("0000:30:00.0"),
                         card(1).pci_bus_id("0000:31:00.0").unhealthy("ECC errors above threshold"),
                         card(2).pci_bus_id("0000:32:00.0")};
  xpu::MetricsSnapshot snapshot;
  snapshot.devices.push_back({0,
                              {{"utilization_ratio", 0.42},
                               {"memory_used_bytes", 8 * kGiB},
                               {"memory_total_bytes", 32 * kGiB},
                               {"temperature_celsius", 56.4}}});
  snapshot.devices.push_back({1, {{"utilization_ratio", 0.0}}});
  snapshot.devices.push_back({2, {}});
  inputs.metrics = snapshot;
  inputs.podresources_up = true;
  inputs.pods["uuid-2"] = ContainerRef{"ml", "trainer-0", "main"};
  return inputs;
}

StatusPageOptions fixed_time() {
  StatusPageOptions options;
  options.generated = std::chrono::system_clock::from_time_t(1'700'000'000);  // 2023-11-14 22:13:20
  return options;
}

// The <tr> of card `index`, or "" when the page has none.
std::string row_of(const std::string& page, unsigned index) {
  std::smatch match;
  const std::regex row("<tr[^>]*data-xpu=\"" + std::to_string(index) + "\">(.*?)</tr>");
  return std::regex_search(page, match, row) ? match[0].str() : std::string();
}

TEST(HtmlEscape, EscapesEveryCharacterThatCanEndTextOrAnAttribute) {
  EXPECT_EQ(html_escape(R"(<a href="x" title='y'>&amp;</a>)"),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;");
  EXPECT_EQ(html_escape("R200 card \xc2\xb5"), "R200 card \xc2\xb5");  // UTF-8 passes through
  EXPECT_EQ(html_escape(""), "");
}

TEST(StatusPage, ShowsEachCardWithItsReadingsHealthAndPod) {
  const std::string page = render_status_page(three_cards(), fixed_time());

  const std::string first = row_of(page, 0);
  ASSERT_FALSE(first.empty()) << page;
  EXPECT_THAT(first, HasSubstr("R200"));
  EXPECT_THAT(first, HasSubstr("0000:30:00.0"));
  EXPECT_THAT(first, HasSubstr(">Healthy<"));
  EXPECT_THAT(first, HasSubstr("42&nbsp;%"));
  EXPECT_THAT(first, HasSubstr("8.0 / 32.0&nbsp;GiB"));
  EXPECT_THAT(first, HasSubstr("25&nbsp;% used"));
  EXPECT_THAT(first, HasSubstr("56&nbsp;&deg;C"));

  const std::string second = row_of(page, 1);
  EXPECT_THAT(second, HasSubstr("class=\"unhealthy\""));
  EXPECT_THAT(second, HasSubstr(">Unhealthy<"));
  EXPECT_THAT(second, HasSubstr("ECC errors above threshold"));

  // Readings xpud left out are dashes, not zeros; the pod is named with its container.
  const std::string third = row_of(page, 2);
  EXPECT_THAT(third, HasSubstr("<td data-label=\"Temperature\" class=\"num\">&mdash;</td>"));
  EXPECT_THAT(third, HasSubstr("ml/trainer-0"));
  EXPECT_THAT(third, HasSubstr("container main"));
  EXPECT_THAT(row_of(page, 0), HasSubstr("<td data-label=\"Pod\">&mdash;</td>"));

  EXPECT_THAT(page, HasSubstr("3 cards, 2 healthy. xpud 1.2.0 (sim backend, driver 4.0.25)."));
  EXPECT_THAT(page, HasSubstr("Updated 2023-11-14 22:13:20 UTC"));
}

TEST(StatusPage, IsOnePhoneReadableSelfRefreshingPageWithLinks) {
  const std::string page = render_status_page(three_cards(), fixed_time());
  EXPECT_THAT(page,
              HasSubstr(R"(<meta name="viewport" content="width=device-width, initial-scale=1">)"));
  EXPECT_THAT(page, HasSubstr("<meta http-equiv=\"refresh\" content=\"5\">"));
  EXPECT_THAT(page, HasSubstr("@media (max-width: 640px)"));
  EXPECT_THAT(page, HasSubstr("<a href=\"/metrics\">"));
  EXPECT_THAT(page, HasSubstr("<a href=\"/healthz\">"));
  // Nothing external and nothing that runs.
  EXPECT_THAT(page, Not(HasSubstr("<script")));
  EXPECT_THAT(page, Not(HasSubstr("http://")));
  EXPECT_THAT(page, Not(HasSubstr("https://")));
  EXPECT_THAT(page, Not(HasSubstr("<link")));
}

TEST(StatusPage, EscapesEveryStringFromOutside) {
  const std::string hostile = "<img src=x onerror=alert(1)>\"'&";
  const std::string escaped = "&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;";
  ScrapeInputs inputs = three_cards();
  for (auto& device : inputs.view.devices) {
    device.model = hostile;
    device.pci_bus_id = hostile;
    device.health_reason = hostile;
    device.healthy = false;
  }
  inputs.view.manager.version = hostile;
  inputs.view.manager.backend = hostile;
  inputs.view.manager.driver_version = hostile;
  inputs.pods["uuid-2"] = ContainerRef{hostile, hostile, hostile};
  const std::string page = render_status_page(inputs, fixed_time());

  EXPECT_THAT(page, Not(HasSubstr("<img")));
  EXPECT_THAT(page, Not(HasSubstr(hostile)));
  // model, bus ID and reason in each of 3 rows; namespace, pod and container in one; xpud's
  // version, backend and driver in the summary.
  std::size_t count = 0;
  for (auto at = page.find(escaped); at != std::string::npos; at = page.find(escaped, at + 1))
    ++count;
  EXPECT_EQ(count, 3u * 3 + 3 + 3) << page;
}

TEST(StatusPage, SaysWhenXpudOrTheKubeletDidNotAnswer) {
  ScrapeInputs down = three_cards();
  down.metrics.reset();
  down.podresources_up = false;
  down.pods.clear();
  const std::string page = render_status_page(down, fixed_time());
  EXPECT_THAT(page, HasSubstr("id=\"xpud-down\""));
  EXPECT_THAT(page, HasSubstr("xpud did not answer"));
  EXPECT_THAT(page, HasSubstr("id=\"podresources-down\""));
  // The cards /metrics still shows, with their health and no readings.
  const std::string sick = row_of(page, 1);
  EXPECT_THAT(sick, HasSubstr("ECC errors above threshold"));
  EXPECT_THAT(sick, HasSubstr("<td data-label=\"Utilisation\" class=\"num\">&mdash;</td>"));
  EXPECT_THAT(row_of(page, 0),
              HasSubstr("<td data-label=\"Temperature\" class=\"num\">&mdash;</td>"));
  EXPECT_THAT(row_of(page, 2), HasSubstr("Healthy"));

  ScrapeInputs no_cards = three_cards();
  no_cards.metrics->devices.clear();
  EXPECT_THAT(render_status_page(no_cards, fixed_time()), HasSubstr("xpud reports no cards."));
}

TEST(StatusPage, ShowsOnlyCardsInBothTheSnapshotAndTheViewAndNoNonsenseNumbers) {
  ScrapeInputs inputs = three_cards();
  inputs.view.devices.pop_back();  // card 2 not in the view yet
  inputs.metrics->devices[0].values["temperature_celsius"] = std::nan("");
  inputs.metrics->devices[0].values["utilization_ratio"] = std::numeric_limits<double>::infinity();
  const std::string page = render_status_page(inputs, fixed_time());
  EXPECT_THAT(row_of(page, 2), ::testing::IsEmpty());
  EXPECT_THAT(page, HasSubstr("2 cards, 1 healthy."));
  const std::string first = row_of(page, 0);
  EXPECT_THAT(first, HasSubstr("<td data-label=\"Temperature\" class=\"num\">&mdash;</td>"));
  EXPECT_THAT(first, HasSubstr("<td data-label=\"Utilisation\" class=\"num\">&mdash;</td>"));
  EXPECT_THAT(first, Not(HasSubstr("nan")));
  EXPECT_THAT(first, Not(HasSubstr("inf")));
}

}  // namespace
}  // namespace shim::exporter
