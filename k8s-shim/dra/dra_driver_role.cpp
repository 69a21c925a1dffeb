// The dra-driver role: xpud's cards (over D-Bus) published as this node's ResourceSlice (API
// server, libcurl), prepared for pods on the kubelet's request (gRPC, DRA v1), and their health
// streamed to the kubelet (DRA health, v1alpha1 and v1: kubelet/health_service.h), which shows
// it in the pods' status.
//
// Threads: the card feed's watcher thread hands each view to its CardState and wakes this thread;
// gRPC's threads serve NodePrepare/UnprepareResources, reading claims through their own HTTP
// handle and the cards from the same feed as the slice and the health stream (the grace period
// applied once, for all three); this thread owns the slice publisher (every API
// write: the slice, and each prepared claim's status.devices), the kubelet plugin's sockets and
// the stop signals. A slow API server can so delay a slice update or a claim's status but never a
// prepare, and the reverse. The held-cards watch asks the kubelet's pod-resources on a thread of
// its own which cards pods hold through the device plugin, and wakes this thread; those cards are
// left out of the slice while held, and nothing is published before its first answer (so a card
// a pod holds is never offered for a moment).
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <spdlog/spdlog.h>

#include "k8s-shim/cards/card_feed.h"
#include "k8s-shim/dra/claim_device_status.h"
#include "k8s-shim/dra/dra_driver_options.h"
#include "k8s-shim/dra/dra_names.h"
#include "k8s-shim/dra/driver_departure.h"
#include "k8s-shim/dra/kube/kube_api.h"
#include "k8s-shim/dra/kubelet/claim_cdi_spec.h"
#include "k8s-shim/dra/kubelet/claim_state.h"
#include "k8s-shim/dra/kubelet/dra_service.h"
#include "k8s-shim/dra/kubelet/kubelet_plugin.h"
#include "k8s-shim/dra/kubelet/prepared_claims.h"
#include "k8s-shim/dra/metadata_attributes.h"
#include "k8s-shim/dra/slices/slice_publisher.h"
#include "k8s-shim/kube/api_server_flags.h"
#include "k8s-shim/kube/http_transport.h"
#include "k8s-shim/kube/kube_api_config.h"
#include "k8s-shim/node_status/node_status_options.h"
#include "k8s-shim/node_status/node_status_reporter.h"
#include "k8s-shim/pod_resources/held_cards_watch.h"
#include "k8s-shim/poll_timeout.h"
#include "k8s-shim/roles.h"
#include "k8s-shim/wake_event.h"

namespace shim {
namespace {

using Clock = std::chrono::steady_clock;

// Look at the sockets this often even when nothing else is due.
constexpr std::chrono::seconds kIdleCheck{2};
// While draining, name the claims still held this often.
constexpr std::chrono::seconds kDrainReport{30};
// While draining with no claim prepared, ask the API server this often whether one is allocated
// here still.
constexpr std::chrono::seconds kDrainAllocationCheck{5};
// How long a leaving driver tries to empty its slice before it goes anyway.
constexpr std::chrono::seconds kWithdrawTimeout{5};

// The cards pods hold through the device plugin, asked every --held-cards-refresh; none when 0.
std::unique_ptr<HeldCardsWatch> watch_held_cards(const dra::DraDriverOptions& driver) {
  if (driver.held_cards.refresh.count() == 0) {
    spdlog::info(
        "--held-cards-refresh 0: cards pods hold through the device plugin are not "
        "looked for");
    return nullptr;
  }
  auto kubelet = std::make_shared<PodResourcesClient>(driver.held_cards.podresources_socket,
                                                      kHeldCardsListDeadline);
  return std::make_unique<HeldCardsWatch>(
      HeldCardsWatch::Options{.socket_path = driver.held_cards.podresources_socket,
                              .refresh = driver.held_cards.refresh,
                              .other_path = "the device plugin"},
      [kubelet] { return kubelet->list(); },
      [domain = std::string(resource_domain(driver.resource_name))](
          const v1::ListPodResourcesResponse& reply) {
        return cards_held_by_device_plugin(reply, domain);
      });
}

// Why prepare refuses a card a pod holds through the device plugin.
constexpr std::string_view kHeldThroughDevicePlugin =
    "a pod holds it through the device plugin (kubelet pod-resources); prepared once that pod is "
    "gone";

void log_left_out(const std::vector<std::string>& left_out) {
  if (left_out.empty()) {
    spdlog::info("no card is held through the device plugin: the slice offers every card");
    return;
  }
  std::string names;
  for (const auto& name : left_out) names += (names.empty() ? "" : ", ") + name;
  spdlog::info("left out of the slice while pods hold them through the device plugin: {}", names);
}

dra::AllocatedClaim allocated_claim(const dra::ResourceClaim& claim) {
  dra::AllocatedClaim allocated{.name = claim.name,
                                .namespace_name = claim.namespace_name,
                                .uid = claim.uid,
                                .allocated = claim.allocated,
                                .results = {},
                                .pod_claim_name = claim.pod_claim_name};
  for (const auto& result : claim.results)
    allocated.results.push_back({result.request, result.driver, result.pool, result.device,
                                 result.admin_access, result.share_id, result.consumed_memory});
  return allocated;
}

// The claims by namespace/name, for the drain's log lines.
std::string claim_names(const std::vector<dra::PreparedClaim>& claims) {
  std::string names;
  for (const auto& claim : claims) {
    if (!names.empty()) names += ", ";
    names += claim.namespace_name + "/" + claim.name;
  }
  return names;
}

// The claims allocated from this node's pool (dra::claims_allocated_here), or nullopt when the
// API server does not say (a removed chart's token no longer works: then only the prepared
// claims count).
std::optional<std::vector<std::string>> claims_allocated_here(const dra::DraDriverOptions& driver,
                                                              dra::KubeApi& api) {
  auto claims = api.list_resource_claims();
  if (!claims) {
    spdlog::info("the ResourceClaims cannot be listed ({}): only the prepared ones are waited for",
                 claims.error().message);
    return std::nullopt;
  }
  return dra::claims_allocated_here(claims.value(), dra::kDriverName, driver.node_name);
}

// What a driver asked to stop does: a driver replaced by a new pod of its DaemonSet goes at once
// and leaves its slice to the successor; a driver leaving this node withdraws its cards and, while
// claims are prepared or allocated here, keeps serving the kubelet (drains).
struct StopPlan {
  bool leaving = false;
  bool drain = false;
};

// Without --daemon-set the driver cannot tell and goes, as it always did.
StopPlan plan_stop(const dra::DraDriverOptions& driver, dra::KubeApi& api,
                   std::size_t prepared_count) {
  if (driver.daemon_set_name.empty()) {
    if (prepared_count > 0)
      spdlog::info("stopping with {} claims prepared (no --daemon-set, so no drain)",
                   prepared_count);
    return {};
  }
  const dra::Departure departure = dra::judge_departure(
      api.get_daemon_set_placement(driver.daemon_set_namespace, driver.daemon_set_name),
      api.get_node_labels(driver.node_name));
  if (!departure.leaving) {
    if (prepared_count > 0)
      spdlog::info("stopping with {} claims prepared: {}", prepared_count, departure.why);
    return {};
  }
  const auto allocated = claims_allocated_here(driver, api);
  const std::size_t waiting = allocated ? allocated->size() : 0;
  if (prepared_count == 0 && waiting == 0) {
    spdlog::info("leaving this node ({}): no claim prepared or allocated here", departure.why);
    return {.leaving = true, .drain = false};
  }
  spdlog::warn(
      "asked to stop with {} claims prepared and {} allocated here, but the driver is leaving "
      "this node ({}): it publishes no card and keeps serving the kubelet until their pods are "
      "gone, so that they can run and be deleted; a second stop signal ends the wait",
      prepared_count, waiting, departure.why);
  return {.leaving = true, .drain = true};
}

// A leaving driver's cards leave the scheduler's view before the driver goes: the kubelet deletes
// a deregistered driver's slices only 30 s later (k8s.io/kubernetes pkg/kubelet/cm/dra/manager.go,
// defaultWipingDelay, kept so that a restarting driver's slices stay), and meanwhile the scheduler
// would allocate them on a node where the device plugin may already hand the same cards out.
// Bounded: an unreachable API server must not hold the node's hand-over.
void withdraw_cards(dra::SlicePublisher& publisher, const xpu::DeviceView& view) {
  xpu::DeviceView none = view;
  none.devices.clear();
  publisher.set_devices(none);
  const Clock::time_point give_up = Clock::now() + kWithdrawTimeout;
  while (true) {
    const Clock::time_point next = publisher.reconcile(Clock::now());
    if (publisher.up_to_date()) {
      spdlog::info("withdrew this node's cards from its ResourceSlice");
      return;
    }
    if (Clock::now() >= give_up) break;
    std::this_thread::sleep_until(std::min(next, give_up));
  }
  spdlog::warn(
      "the ResourceSlice could not be emptied within {} s: the kubelet deletes it 30 s after the "
      "driver deregisters",
      std::chrono::duration_cast<std::chrono::seconds>(kWithdrawTimeout).count());
}

}  // namespace

int run_dra_driver(const dra::DraDriverOptions& driver, CardFeed& cards, xpu::StopSignals& stop) {
  auto config = kube::api_config(driver.api, kube::process_environment);
  if (!config) {
    spdlog::error("{}", config.error());
    return 1;
  }
  spdlog::info(
      "starting: driver {}, node {}, API server {}, plugin directory {}, registry {}, CDI {}, "
      "device metadata {}",
      dra::kDriverName, driver.node_name, config->server, driver.plugin_dir, driver.registry_dir,
      driver.cdi_dir, driver.no_device_metadata ? "off" : "on");
  // Two handles: the publisher's calls (this thread) and the claim reads (gRPC threads) never
  // wait for each other.
  auto slice_transport = kube::CurlTransport::create(*config);
  auto claim_transport = kube::CurlTransport::create(*config);
  if (!slice_transport || !claim_transport) {
    spdlog::error("{}", slice_transport ? claim_transport.error() : slice_transport.error());
    return 1;
  }
  // A third handle, on the node-status writer's own thread: node writes never wait for the slice.
  std::optional<node_status::NodeStatusReporter> node_status;
  if (driver.node_status) {
    auto node_transport = kube::CurlTransport::create(*config);
    if (!node_transport) {
      spdlog::error("{}", node_transport.error());
      return 1;
    }
    node_status.emplace(std::move(*node_transport), driver.node_name,
                        std::string(node_status::kDraDriverFieldManager), driver.xpud_grace_period);
  }
  dra::KubeApi slice_api(**slice_transport);
  dra::KubeApi claim_api(**claim_transport);
  dra::SlicePublisher publisher(slice_api, driver.node_name, driver.taints, driver.shares);
  dra::DeviceStatusWriter claim_status(slice_api);
  WakeEvent wake;  // claims changed (the cards' news wakes this thread through the feed)
  std::atomic<std::uint64_t> claims_changed{0};  // bumped by gRPC threads, read by this one
  int status = 0;
  {
    auto lookup = [&claim_api](std::string_view ns,
                               std::string_view name) -> xpu::Result<dra::AllocatedClaim> {
      auto claim = claim_api.get_resource_claim(ns, name);
      if (!claim) return xpu::Error{claim.error().message};
      return allocated_claim(claim.value());
    };
    // Asked before the first slice; read by prepare too (gRPC threads), so it comes first.
    const std::unique_ptr<HeldCardsWatch> held_cards = watch_held_cards(driver);
    // Prepare's view: a fresh answer, since a refresh's can be two seconds old and a pod the
    // device plugin started since then holds a card the slice still offered.
    auto card_source = [&cards, &held_cards] {
      std::vector<xpu::DeviceInfo> now = cards.cards_at(Clock::now());
      if (!held_cards) return now;
      return with_held_cards_unhealthy(std::move(now),
                                       held_cards->fresh(Clock::now() + kHeldCardsFreshWait).held,
                                       kHeldThroughDevicePlugin);
    };
    // Under the plugin directory, which the chart mounts at its path on the host: the container
    // runtime reads the files at the paths the CDI specs name.
    std::optional<dra::DeviceMetadataConfig> metadata;
    if (!driver.no_device_metadata)
      metadata = dra::DeviceMetadataConfig{
          .files = dra::DeviceMetadataFiles(std::filesystem::path(driver.plugin_dir) /
                                            dra::kMetadataHostSubdirectory),
          .attributes = [&cards](const dra::PreparedDevice& device) {
            return dra::metadata_attributes(
                *cards.at(Clock::now()).view, device.device,
                device.share_id.empty() ? std::nullopt : std::optional(device.memory_limit));
          }};
    // Declared before the plugin, whose DRA service calls it until the plugin goes.
    dra::ClaimState claim_state(
        lookup, card_source, driver.node_name,
        dra::PreparedClaims::load(std::filesystem::path(driver.plugin_dir) / "checkpoint.json"),
        dra::ClaimCdiSpecs(driver.cdi_dir),
        [&wake, &claims_changed] {
          claims_changed.fetch_add(1);
          wake.signal();
        },
        [&cards, enforcement = driver.shares.enforcement]() -> dra::InstanceHook {
          if (enforcement != dra::ShareEnforcement::xpud) return {};
          const xpu::ManagerInfo manager = cards.at(Clock::now()).view->manager;
          std::vector<std::string> hook = manager.instance_hook;
          // A runtime runs the hook's path as root on the host: only an absolute one, as xpud's
          // configuration requires.
          if (!hook.empty() && !hook.front().starts_with('/')) {
            spdlog::warn("xpud's InstanceHook \"{}\" is no absolute path: shares get no hooks",
                         hook.front());
            return {};
          }
          if (!hook.empty() && !manager.share_instances_supported)
            spdlog::warn(
                "xpud {} predates ShareInstancesSupported: each container of a share "
                "gets an instance of its own (docs/dra-sharing.md, \"One bound per "
                "share\"); upgrade xpud on this node",
                manager.version);
          return dra::InstanceHook{std::move(hook), manager.share_instances_supported};
        },
        std::move(metadata), [&cards] { return cards.at(Clock::now()).view->vfio_functions; });
    auto service = std::make_unique<dra::DraService>(claim_state);
    auto plugin = dra::KubeletPlugin::start(
        dra::KubeletPluginPaths{.plugin_directory = driver.plugin_dir,
                                .registry_directory = driver.registry_dir},
        std::move(service));
    if (!plugin) {
      spdlog::error("{}", plugin.error());
      return 1;
    }
    spdlog::info("serving {} and registering through {}", (*plugin)->paths().dra_socket().string(),
                 (*plugin)->paths().registration_socket().string());

    const CardFeed::Watch watching = cards.watch();

    bool was_registered = false;
    std::uint64_t published_generation = 0;
    // What the slice was last set from: the cards' generation and the held cards'.
    std::optional<std::pair<std::uint64_t, std::uint64_t>> offered_from;
    std::vector<std::string> left_out_logged;
    // Differs from the counter so that the first pass writes the checkpoint's claims' status.
    std::uint64_t claims_seen = ~std::uint64_t{0};
    bool draining = false;
    Clock::time_point next_drain_report{};
    Clock::time_point next_allocation_check{};
    while (true) {
      if (stop.stop_requested() && !draining) {
        const StopPlan plan = plan_stop(driver, slice_api, claim_state.prepared_count());
        // No new claim is allocated on this node's cards from now on.
        if (plan.leaving) withdraw_cards(publisher, *cards.at(Clock::now()).view);
        if (!plan.drain) break;
        draining = true;
      }
      if (draining) {
        const std::vector<dra::PreparedClaim> held = claim_state.prepared_claims();
        if (Clock::now() >= next_allocation_check) {
          next_allocation_check = Clock::now() + kDrainAllocationCheck;
          // Claims allocated here whose pods the kubelet has not prepared yet: they still come.
          if (held.empty()) {
            const auto allocated = claims_allocated_here(driver, slice_api);
            if (!allocated || allocated->empty()) {
              spdlog::info(
                  "drained: the kubelet unprepared every claim and none is allocated here");
              break;
            }
          }
        }
        if ((*plugin)->taken_over()) {
          // A new driver pod (the chart installed again) bound our sockets: it loaded the same
          // checkpoint and the kubelet now asks it.
          spdlog::info(
              "a new driver serves this node's sockets and checkpoint; {} claims are "
              "its now",
              held.size());
          break;
        }
        if (!held.empty() && Clock::now() >= next_drain_report) {
          spdlog::info("draining: {} claims still prepared: {}", held.size(), claim_names(held));
          next_drain_report = Clock::now() + kDrainReport;
        }
      }
      const auto now = Clock::now();
      const CardState::Snapshot snapshot = cards.at(now);
      const std::uint64_t claims_now = claims_changed.load();
      if (snapshot.generation != published_generation || claims_now != claims_seen) {
        claim_status.set(claim_state.prepared_claims(), *snapshot.view, snapshot.xpud_lost,
                         std::chrono::system_clock::now());
        claims_seen = claims_now;
      }
      const HeldCardsWatch::Snapshot held_now =
          held_cards ? held_cards->snapshot()
                     : HeldCardsWatch::Snapshot{.held = {}, .generation = 0, .answered = true};
      // While draining the slice stays empty.
      if (!draining && held_now.answered &&
          offered_from != std::pair(snapshot.generation, held_now.generation)) {
        std::vector<std::string> left_out;
        publisher.set_devices(without_held_cards(*snapshot.view, held_now.held, &left_out));
        if (left_out != left_out_logged) log_left_out(left_out);
        left_out_logged = std::move(left_out);
        offered_from = std::pair(snapshot.generation, held_now.generation);
      }
      if (snapshot.generation != published_generation) {
        // Sends only what changed for the kubelet (and resends on its own timer).
        (*plugin)->health().update(snapshot.view->devices);
        published_generation = snapshot.generation;
      }
      Clock::time_point deadline = std::min(publisher.reconcile(now), now + kIdleCheck);
      deadline = std::min(deadline, claim_status.reconcile(now));
      if (snapshot.changes_at) deadline = std::min(deadline, *snapshot.changes_at);
      if (draining) deadline = std::min({deadline, next_drain_report, next_allocation_check});
      if (!(*plugin)->sockets_present()) {
        auto restarted = (*plugin)->restart_missing();
        if (!restarted) spdlog::warn("{}", restarted.error());
      }
      if ((*plugin)->registered() != was_registered) {
        was_registered = !was_registered;
        if (was_registered) spdlog::info("the kubelet registered the driver");
      }
      // Serving: the kubelet knows the driver and the scheduler knows its cards.
      if (node_status) node_status->update(snapshot, was_registered && publisher.published());

      pollfd fds[] = {{stop.fd(), POLLIN, 0},
                      {wake.fd(), POLLIN, 0},
                      {cards.wake_fd(), POLLIN, 0},
                      {held_cards ? held_cards->wake_fd() : -1, POLLIN, 0}};
      if (::poll(fds, std::size(fds), poll_timeout_ms(deadline)) < 0 && errno != EINTR) {
        spdlog::error("poll failed: {}", std::strerror(errno));
        status = 1;
        break;
      }
      const std::optional<int> signal = fds[0].revents & POLLIN ? stop.take() : std::nullopt;
      if (draining && (signal == SIGTERM || signal == SIGINT)) {
        spdlog::warn("a second stop signal: leaving {} claims prepared",
                     claim_state.prepared_count());
        break;
      }
      if (fds[1].revents & POLLIN) wake.clear();
      if (fds[2].revents & POLLIN) cards.clear_wake();
      if (held_cards && (fds[3].revents & POLLIN)) held_cards->clear_wake();
    }
    spdlog::info(
        "stopping: {} claims prepared stay in the checkpoint; {} slice writes and {} claim status "
        "writes this run",
        claim_state.prepared_count(), publisher.writes(), claim_status.writes());
    // The ready label goes first (the node stops being advertised as serving), then the plugin
    // (its sockets are removed), then the xpud client's watcher.
    if (node_status) node_status->stop();
    plugin->reset();
  }
  spdlog::info("stopped");
  return status;
}

}  // namespace shim
