// The exporter role: Prometheus metrics for every XPU on :9507, labelled with the pod that holds
// the card.
#include <chrono>
#include <optional>

#include <spdlog/spdlog.h>

#include "common/xpud_client.h"
#include "k8s-shim/exporter/exporter_http_server.h"
#include "k8s-shim/exporter/listen_address.h"
#include "k8s-shim/exporter/pod_owners_cache.h"
#include "k8s-shim/exporter/pod_resources_client.h"
#include "k8s-shim/exporter/scraper.h"
#include "k8s-shim/resource_name.h"
#include "k8s-shim/roles.h"

namespace shim {
namespace {

using namespace std::chrono_literals;

// A scrape answers within about a second even when xpud or the kubelet hangs: the two waits
// below run one after the other.
constexpr auto kXpudCallTimeout = 500ms;
constexpr auto kListDeadline = 400ms;
constexpr auto kPodMapMaxAge = 2000ms;

}  // namespace

int run_exporter(ShimOptions options, std::span<const std::string> args, xpu::StopSignals& stop) {
  auto listen = exporter::parse_listen_address(exporter::kDefaultListen);
  std::string podresources_socket(exporter::kDefaultPodResourcesSocket);
  std::string resource_name(kDefaultResourceName);
  bool resource_per_model = false;
  xpu::CommandLine cli("xpu-k8s-shim exporter", "[OPTIONS]");
  cli.add_option("listen", "HOST:PORT",
                 "address to serve /metrics on: HOST:PORT, [IPV6]:PORT or :PORT (default :9507)",
                 [&listen](std::string_view value) -> xpu::Status {
                   auto parsed = exporter::parse_listen_address(value);
                   if (!parsed) return xpu::Error{parsed.error()};
                   if (auto supported = exporter::ExporterHttpServer::can_listen_on(*parsed);
                       !supported)
                     return supported;
                   listen = std::move(parsed);
                   return xpu::ok_status();
                 });
  cli.add_option(
      "podresources-socket", "PATH",
      "the kubelet's pod-resources socket (default /var/lib/kubelet/pod-resources/kubelet.sock)",
      [&podresources_socket](std::string_view value) -> xpu::Status {
        if (value.empty()) return xpu::Error{"must not be empty"};
        podresources_socket = std::string(value);
        return xpu::ok_status();
      });
  // The device plugin's flags, so a deployment passes both roles the same ones: every resource the
  // plugin advertises is in the domain of its --resource-name, and that domain is what the
  // exporter reads, per-model or not.
  cli.add_option("resource-name", "NAME",
                 "the device plugin's --resource-name (default " +
                     std::string(kDefaultResourceName) +
                     "): pod-resources entries in its domain are read as XPUs",
                 [&resource_name](std::string_view value) -> xpu::Status {
                   if (auto status = validate_extended_resource_name(value); !status) return status;
                   resource_name = std::string(value);
                   return xpu::ok_status();
                 });
  cli.add_flag("resource-per-model", &resource_per_model,
               "the device plugin's --resource-per-model; accepted for symmetry (per-model names "
               "are in the same domain)");
  parse_role_command_line(cli, options, args, "exporter");
  const std::string_view resource_domain = shim::resource_domain(resource_name);

  try {
    xpu::XpudClient xpud(xpu::ClientOptions{options.bus_address, kXpudCallTimeout});
    xpud.watch([last_present = std::optional<bool>()](const xpu::DeviceView& view) mutable {
      if (last_present == view.xpud_present) return;
      last_present = view.xpud_present;
      if (view.xpud_present)
        spdlog::info("xpud {} ({} backend) is up with {} devices", view.manager.version,
                     view.manager.backend, view.devices.size());
      else
        spdlog::warn("xpud is not on the bus; scrapes report xpu_exporter_xpud_up 0");
    });

    exporter::PodResourcesClient kubelet(podresources_socket, kListDeadline);
    exporter::PodOwnersCache owners([&kubelet] { return kubelet.list(); }, kPodMapMaxAge,
                                    exporter::PodMapBuilder(resource_domain));
    exporter::Scraper scraper(xpud, owners);

    // Declared last, so it stops (and finishes requests in flight) before what it uses goes.
    auto server =
        exporter::ExporterHttpServer::start(*listen, [&scraper] { return scraper.scrape(); });
    if (!server) {
      spdlog::error("{}", server.error());
      return 1;
    }
    spdlog::info("serving /metrics on {} (port {}); pod-resources from {}, resources {}/*",
                 listen->to_string(), (*server)->port(), podresources_socket, resource_domain);

    while (!stop.wait_for_stop(std::chrono::hours(1))) {
    }
    spdlog::info("stopping");
    server->reset();
    return 0;
  } catch (const std::exception& e) {
    spdlog::error("exporter: {}", e.what());
    return 1;
  }
}

}  // namespace shim
