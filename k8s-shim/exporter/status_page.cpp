#include "k8s-shim/exporter/status_page.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <optional>
#include <vector>

#include "common/names.h"

namespace shim::exporter {
namespace {

namespace key = xpu::names::metric;

// Phones get each card as a block of labelled cells, two to a line, health across the whole
// width (the header row is hidden there); wider screens get the plain table. Colours follow the
// browser's light or dark scheme.
constexpr std::string_view kStyle = R"(
:root { color-scheme: light dark; --line: #8884; --bad: #c62828; --good: #2e7d32; }
body { font: 15px/1.4 system-ui, sans-serif; margin: 1em; }
h1 { font-size: 1.3em; margin: 0 0 .3em; }
p { margin: .3em 0; }
.banner { padding: .4em .6em; border-left: 4px solid var(--bad); background: #c628281a; }
table { border-collapse: collapse; width: 100%; margin: .6em 0; }
th, td { text-align: left; padding: .35em .6em; vertical-align: top;
         border-bottom: 1px solid var(--line); }
th { font-weight: 600; }
td.num { font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.unhealthy { background: #c6282814; }
.healthy { color: var(--good); font-weight: 600; }
.unhealthy-state { color: var(--bad); font-weight: 600; }
.reason, .sub { display: block; font-size: .85em; opacity: .8; overflow-wrap: anywhere; }
meter { width: 4em; vertical-align: middle; }
footer { font-size: .85em; opacity: .8; }
@media (max-width: 640px) {
  thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  table, tbody { display: block; width: auto; }
  tr { display: grid; grid-template-columns: 1fr 1fr; border: 1px solid var(--line);
       border-radius: 6px; margin: .6em 0; padding: .3em 0; }
  td { display: block; border: none; padding: .15em .6em; }
  td[data-label="Health"] { grid-column: 1 / -1; }
  td::before { content: attr(data-label); display: block; font-size: .75em; opacity: .7; }
}
)";

void append_escaped(std::string& out, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
}

// A reading xpud gave, if it gave one that is a number.
std::optional<double> reading(const xpu::DeviceMetrics& metrics, std::string_view name) {
  auto found = metrics.values.find(std::string(name));
  if (found == metrics.values.end() || !std::isfinite(found->second)) return std::nullopt;
  return found->second;
}

template <typename... Args>
std::string format(const char* pattern, Args... args) {
  char text[96];
  std::snprintf(text, sizeof text, pattern, args...);
  return text;
}

constexpr std::string_view kMissing = "&mdash;";

std::string utilization_cell(std::optional<double> ratio) {
  if (!ratio) return std::string(kMissing);
  const double shown = std::clamp(*ratio, 0.0, 1.0);
  return format("<meter min=\"0\" max=\"1\" value=\"%.3f\"></meter> %.0f&nbsp;%%", shown,
                *ratio * 100);
}

std::string memory_cell(std::optional<double> used, std::optional<double> total) {
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  if (!used && !total) return std::string(kMissing);
  if (!total) return format("%.1f&nbsp;GiB used", *used / kGiB);
  if (!used) return format("%.1f&nbsp;GiB", *total / kGiB);
  std::string cell = format("%.1f / %.1f&nbsp;GiB", *used / kGiB, *total / kGiB);
  if (*total > 0)
    cell += format("<span class=\"sub\">%.0f&nbsp;%% used</span>", *used / *total * 100);
  return cell;
}

std::string temperature_cell(std::optional<double> celsius) {
  if (!celsius) return std::string(kMissing);
  return format("%.0f&nbsp;&deg;C", *celsius);
}

std::string utc_time(std::chrono::system_clock::time_point when) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(when);
  std::tm parts{};
  ::gmtime_r(&seconds, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &parts);
  return text;
}

void append_row(std::string& out, const xpu::DeviceInfo& device, const xpu::DeviceMetrics& metrics,
                const PodMap& pods) {
  out += device.healthy ? "<tr data-xpu=\"" : "<tr class=\"unhealthy\" data-xpu=\"";
  out += std::to_string(device.index) + "\">";

  out += "<td data-label=\"XPU\" class=\"num\">" + std::to_string(device.index) + "</td>";

  out += "<td data-label=\"Model\">";
  append_escaped(out, device.model);
  out += "<span class=\"sub\">";
  append_escaped(out, device.pci_bus_id);
  out += "</span></td>";

  out += "<td data-label=\"Health\">";
  if (device.healthy) {
    out += "<span class=\"healthy\">Healthy</span>";
  } else {
    out += "<span class=\"unhealthy-state\">Unhealthy</span>";
    if (!device.health_reason.empty()) {
      out += "<span class=\"reason\">";
      append_escaped(out, device.health_reason);
      out += "</span>";
    }
  }
  out += "</td>";

  out += "<td data-label=\"Utilisation\" class=\"num\">" +
         utilization_cell(reading(metrics, key::kUtilization)) + "</td>";
  out += "<td data-label=\"Memory\" class=\"num\">" +
         memory_cell(reading(metrics, key::kMemoryUsed), reading(metrics, key::kMemoryTotal)) +
         "</td>";
  out += "<td data-label=\"Temperature\" class=\"num\">" +
         temperature_cell(reading(metrics, key::kTemperature)) + "</td>";

  out += "<td data-label=\"Pod\">";
  auto holder = device.uuid.empty() ? pods.end() : pods.find(device.uuid);
  if (holder == pods.end()) {
    out += kMissing;
  } else {
    append_escaped(out, holder->second.pod_namespace);
    out += "/";
    append_escaped(out, holder->second.pod);
    out += "<span class=\"sub\">container ";
    append_escaped(out, holder->second.container);
    out += "</span>";
  }
  out += "</td></tr>\n";
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  append_escaped(out, text);
  return out;
}

std::string render_status_page(const ScrapeInputs& inputs, const StatusPageOptions& options) {
  std::string out;
  out.reserve(8192);
  out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out +=
      "<meta http-equiv=\"refresh\" content=\"" + std::to_string(options.refresh.count()) + "\">\n";
  out += "<title>XPU exporter</title>\n<style>";
  out += kStyle;
  out += "</style></head>\n<body>\n<h1>Kunlunxin XPUs on this node</h1>\n";

  // The cards /metrics shows, by index.
  const std::vector<ShownCard> cards = shown_cards(inputs);

  if (!inputs.metrics) {
    out +=
        "<p class=\"banner\" id=\"xpud-down\">xpud did not answer: no readings to show "
        "(<code>xpu_exporter_xpud_up 0</code>).</p>\n";
  } else {
    unsigned healthy = 0;
    for (const auto& card : cards) healthy += card.device->healthy ? 1 : 0;
    const auto& manager = inputs.view.manager;
    out += "<p id=\"summary\">" + std::to_string(cards.size()) +
           (cards.size() == 1 ? " card, " : " cards, ") + std::to_string(healthy) +
           " healthy. xpud ";
    append_escaped(out, manager.version);
    out += " (";
    append_escaped(out, manager.backend);
    out += " backend";
    if (!manager.driver_version.empty()) {
      out += ", driver ";
      append_escaped(out, manager.driver_version);
    }
    out += ").</p>\n";
  }
  if (!inputs.podresources_up)
    out +=
        "<p class=\"banner\" id=\"podresources-down\">The kubelet's pod-resources API did not "
        "answer: the pods holding the cards are not known "
        "(<code>xpu_exporter_podresources_up 0</code>).</p>\n";

  if (!cards.empty()) {
    out +=
        "<table>\n<thead><tr><th>XPU</th><th>Model</th><th>Health</th><th>Utilisation</th>"
        "<th>Memory</th><th>Temperature</th><th>Pod</th></tr></thead>\n<tbody>\n";
    const xpu::DeviceMetrics no_readings;
    for (const auto& card : cards)
      append_row(out, *card.device, card.metrics ? *card.metrics : no_readings, inputs.pods);
    out += "</tbody></table>\n";
  } else if (inputs.metrics) {
    out += "<p>xpud reports no cards.</p>\n";
  }

  out +=
      "<footer><p><a href=\"/metrics\">Metrics</a> &middot; <a href=\"/healthz\">Health</a>"
      "</p><p>Updated " +
      utc_time(options.generated) + "; this page reloads every " +
      std::to_string(options.refresh.count()) + "&nbsp;s.</p></footer>\n</body></html>\n";
  return out;
}

}  // namespace shim::exporter
