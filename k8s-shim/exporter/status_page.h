// The exporter's `/` page: the node's cards in one self-contained HTML page (no scripts, no
// external assets), from the same inputs as a scrape, refreshed by the browser. Pure, so that
// the escaping of every outside string is unit-tested.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "k8s-shim/exporter/metrics_renderer.h"

namespace shim::exporter {

inline constexpr std::string_view kHtmlContentType = "text/html; charset=utf-8";

// Sent with the page: nothing but its own inline styles may load or run, so that a string that
// escaped the escaping still could not run a script or fetch anything.
inline constexpr std::string_view kStatusPageContentSecurityPolicy =
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'";

struct StatusPageOptions {
  std::chrono::seconds refresh{5};                  // the browser reloads the page this often
  std::chrono::system_clock::time_point generated;  // shown as "Updated ...", in UTC
};

// `&`, `<`, `>`, `"` and `'` as character references: safe in text and in quoted attributes.
std::string html_escape(std::string_view text);

// Cards are those /metrics shows (shown_cards), with their health; a reading xpud left out, or
// did not answer for, shows as a dash. Says so when xpud or the kubelet did not answer.
std::string render_status_page(const ScrapeInputs& inputs, const StatusPageOptions& options);

}  // namespace shim::exporter
