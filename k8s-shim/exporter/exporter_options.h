// The exporter role's own flags (besides the options every shim role takes).
#pragma once

#include <chrono>
#include <span>
#include <string>

#include "common/command_line.h"
#include "k8s-shim/exporter/listen_address.h"
#include "k8s-shim/pod_resources/held_cards_options.h"
#include "k8s-shim/resource_name.h"
#include "k8s-shim/shim_options.h"

namespace shim::exporter {

struct ExporterOptions {
  // --listen; kDefaultListen (":9507") as parse_listen_address reads it.
  ListenAddress listen{.family = ListenAddress::Family::Any, .host = {}, .port = 9507};
  std::string podresources_socket{kDefaultPodResourcesSocket};
  // The device plugin's --resource-name: pod-resources entries in its domain are read as XPUs.
  std::string resource_name{kDefaultResourceName};
  bool resource_per_model = false;  // accepted for symmetry with the device plugin
  std::string web_config_file;      // empty: plain HTTP, no basic auth
  // The device plugin's and the DRA driver's --xpud-grace-period: past it every card's series say
  // unhealthy, as those roles then have it.
  std::chrono::seconds xpud_grace_period{kDefaultXpudGracePeriod};
};

// The exporter's calls to xpud (its card feed's watcher, each scrape's GetMetrics) wait this long
// at most: a scrape answers within about a second even when xpud or the kubelet hangs (the
// pod-resources deadline, exporter_role.cpp, comes on top).
inline constexpr std::chrono::milliseconds kXpudCallTimeout{500};

// --listen HOST:PORT, --podresources-socket PATH, --resource-name NAME (validated),
// --resource-per-model, --web-config-file PATH, --xpud-grace-period SECONDS.
void add_exporter_options(xpu::CommandLine& cli, ExporterOptions& options);

// The role's whole command line: bad flags or values print one line and exit 2.
ExporterOptions parse_exporter_command_line(ShimOptions& options,
                                            std::span<const std::string> args);

}  // namespace shim::exporter
