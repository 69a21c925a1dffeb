// The exporter role: Prometheus metrics for every XPU on :9507, labelled with the pod that holds
// the card.
//
// Threads: the card feed's watcher thread hands each view to the feed's CardState; the HTTP
// server's threads scrape, reading the cards from it (so past xpud's grace period every card is
// unhealthy, as the device plugin and the DRA driver have it) and each scrape's sample through a
// client of their own (metrics, not cards); this thread reloads the web config and waits for a
// stop signal.
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include <spdlog/spdlog.h>

#include "common/xpud_client.h"
#include "k8s-shim/cards/card_feed.h"
#include "k8s-shim/exporter/exporter_http_server.h"
#include "k8s-shim/exporter/exporter_options.h"
#include "k8s-shim/exporter/listen_address.h"
#include "k8s-shim/exporter/pod_owners_cache.h"
#include "k8s-shim/exporter/scraper.h"
#include "k8s-shim/exporter/web_config.h"
#include "k8s-shim/pod_resources/pod_resources_client.h"
#include "k8s-shim/resource_name.h"
#include "k8s-shim/roles.h"

namespace shim {
namespace {

using namespace std::chrono_literals;

// A scrape answers within about a second even when xpud or the kubelet hangs: this wait runs after
// xpud's (kXpudCallTimeout, exporter_options.h).
constexpr auto kListDeadline = 400ms;
constexpr auto kPodMapMaxAge = 2000ms;
// How often the web config and the files it names are checked for changes (cert-manager
// renews certificates days ahead, so seconds of delay cost nothing).
constexpr auto kWebConfigCheckEvery = 5s;

// Every connection the server may hold is a descriptor; systemd's default soft limit of 1024
// would otherwise cap it below HttpLimits::max_connections.
void raise_open_file_limit(rlim_t wanted) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= wanted) return;
  limit.rlim_cur = std::min(wanted, limit.rlim_max);
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0)
    spdlog::warn("cannot raise the open-file limit to {}", wanted);
}

// glibc gives each thread that allocates while another holds an arena's lock an arena of its
// own, up to 8 per core, and each arena keeps what was freed in it. Here the four server
// threads take turns building the body (whichever serves the first scrape after a change), so
// each came to hold a build's worth of freed memory; one arena, with the trim after each build
// (Scraper::scrape_body), holds the least (figures: bench/RESULTS.md, "Exporter: one malloc
// arena"). One arena costs no contention worth the name: the threads mostly wait, and the one
// heavy allocator, a build, runs at most about once a second, under the body cache's lock.
// Called before any thread starts.
void use_one_malloc_arena() {
  if (::mallopt(M_ARENA_MAX, 1) != 1) spdlog::debug("mallopt(M_ARENA_MAX, 1) refused");
}

// Reloads the web config when it or a file it names changes. A broken new version is logged
// once and retried at each check (cheap: a few KiB) until it loads; meanwhile the server keeps
// the last good one.
class WebConfigReloader {
 public:
  WebConfigReloader(std::string path, std::vector<exporter::FileStamp> files)
      : path_(std::move(path)), files_(std::move(files)) {}

  void check(exporter::ExporterHttpServer& server) {
    if (path_.empty() || !exporter::web_config_files_changed(files_)) return;
    auto loaded = exporter::load_web_config(path_);
    if (!loaded) return fail(loaded.error());
    auto files = loaded->files;
    if (auto applied = server.reconfigure(std::move(loaded->config)); !applied)
      return fail(applied.error());
    files_ = std::move(files);
    last_error_.clear();
    spdlog::info("reloaded web config {}", path_);
  }

 private:
  void fail(const std::string& error) {
    if (error != last_error_) spdlog::error("{}; keeping the previous web config", error);
    last_error_ = error;
  }

  std::string path_;
  std::vector<exporter::FileStamp> files_;
  std::string last_error_;
};

}  // namespace

int run_exporter(const ShimOptions& options, const exporter::ExporterOptions& flags,
                 CardFeed& cards, xpu::StopSignals& stop) {
  const auto& listen = flags.listen;
  const auto& podresources_socket = flags.podresources_socket;
  const auto& web_config_file = flags.web_config_file;
  const std::string_view resource_domain = shim::resource_domain(flags.resource_name);

  exporter::LoadedWebConfig web;
  if (!web_config_file.empty()) {
    auto loaded = exporter::load_web_config(web_config_file);
    if (!loaded) {
      spdlog::error("{}", loaded.error());
      return 2;
    }
    web = std::move(*loaded);
  }
  use_one_malloc_arena();
  const exporter::HttpLimits limits;
  raise_open_file_limit(limits.max_connections + 256);

  try {
    // Each scrape's GetMetrics, GetProcesses and ListInstances: one-shot calls of a sample,
    // not the cards (those come from the feed).
    xpu::XpudClient xpud(xpu::ClientOptions{options.bus_address, exporter::kXpudCallTimeout});
    PodResourcesClient kubelet(podresources_socket, kListDeadline);
    exporter::PodOwnersCache owners([&kubelet] { return kubelet.list(); }, kPodMapMaxAge,
                                    exporter::PodMapBuilder(resource_domain));
    exporter::Scraper scraper(xpud, owners, cards.state());
    // Every change the watcher reports (a card's health, a card added or gone, xpud leaving)
    // moves the cards' generation, which tells the scraper that its cached body is out of date.
    const CardFeed::Watch watching =
        cards.watch([&cards, grace = flags.xpud_grace_period, last_present = std::optional<bool>()](
                        CardFeed::Clock::time_point now) mutable {
          const auto snapshot = cards.at(now);
          const xpu::DeviceView& view = *snapshot.view;
          if (last_present == view.xpud_present) return;
          last_present = view.xpud_present;
          if (view.xpud_present)
            spdlog::info("xpud {} ({} backend) is up with {} devices", view.manager.version,
                         view.manager.backend, view.devices.size());
          else
            spdlog::warn(
                "xpud is absent (gone from the bus, or not answering); scrapes report "
                "xpu_exporter_xpud_up 0, and every card unhealthy if it stays away for {} s",
                grace.count());
        });

    // Declared last, so it stops (and finishes requests in flight) before what it uses goes.
    const bool tls = web.config.tls.has_value();
    const bool basic_auth = !web.config.basic_auth_users.empty();
    const exporter::ExporterHttpServer::MetricsBodySource metrics = [&scraper] {
      return scraper.scrape_body();
    };
    auto server = exporter::ExporterHttpServer::start(listen, metrics, limits, web.config,
                                                      [&scraper] { return scraper.status_page(); });
    if (!server) {
      spdlog::error("{}", server.error());
      return 1;
    }
    spdlog::info(
        "serving /metrics on {} (port {}) over {}{}; pod-resources from {}, resources {}/*",
        listen.to_string(), (*server)->port(), tls ? "https" : "http",
        basic_auth ? " with basic auth" : "", podresources_socket, resource_domain);

    WebConfigReloader reloader(web_config_file, std::move(web.files));
    while (!stop.wait_for_stop(kWebConfigCheckEvery)) reloader.check(**server);
    spdlog::info("stopping");
    server->reset();
    return 0;
  } catch (const std::exception& e) {
    spdlog::error("exporter: {}", e.what());
    return 1;
  }
}

}  // namespace shim
