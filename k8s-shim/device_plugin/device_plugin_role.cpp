// The device-plugin role: xpud's devices (over D-Bus) advertised to the kubelet (over gRPC).
//
// Threads: the card feed's watcher thread, after each view from xpud, has the ResourceTracker plan
// from the feed's state, which publishes to the ListAndWatch streams directly (gRPC threads), and
// renders the node-feature labels; this thread owns the KubeletConnector (servers, registration,
// directory watch), the grace-period timer (the tracker plans again when the state's deadline
// comes), the virtual-function reconfiguration (the feed's one write) and the NFD feature file
// (written here, never on the watcher thread, so a slow disk cannot delay health updates), and
// handles stop signals. The held-cards watch asks the kubelet's pod-resources on a thread of its
// own which cards pods hold through DRA claims, and wakes this thread, which hands them to the
// tracker (before the first registration too: no card a claim holds is advertised for a moment).
// A refresh's answer can be two seconds old, and a pod that got its card through a claim since
// then holds a card the kubelet may still offer: GetPreferredAllocation (gRPC threads) first
// asks the watch for a fresh answer and hands it to the tracker itself.
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/names.h"
#include "k8s-shim/cards/card_feed.h"
#include "k8s-shim/device_plugin/allocation_window.h"
#include "k8s-shim/device_plugin/device_plugin_options.h"
#include "k8s-shim/device_plugin/kubelet_connector.h"
#include "k8s-shim/device_plugin/node_feature_file.h"
#include "k8s-shim/device_plugin/node_features.h"
#include "k8s-shim/device_plugin/resource_tracker.h"
#include "k8s-shim/device_plugin/vf_reconfiguration.h"
#include "k8s-shim/kube/api_server_flags.h"
#include "k8s-shim/kube/http_transport.h"
#include "k8s-shim/node_status/node_handover.h"
#include "k8s-shim/node_status/node_status_options.h"
#include "k8s-shim/node_status/node_status_reporter.h"
#include "k8s-shim/pod_resources/held_cards_watch.h"
#include "k8s-shim/poll_timeout.h"
#include "k8s-shim/roles.h"

namespace shim {
namespace {

using Clock = std::chrono::steady_clock;

// Even with nothing scheduled, look at the plugin directory this often: covers a directory that
// did not exist yet and any inotify event lost to overflow.
constexpr std::chrono::seconds kIdleCheck{2};
// Registering before the xpud client's first answer would advertise no devices for a moment, and
// the kubelet would take the node's allocatable to 0 meanwhile (at a rolling update, for a node
// that has cards), refusing pods admitted in that moment. The first answer comes within
// milliseconds, xpud's devices or none when xpud is not running; only a bus that does not answer
// at all holds it back, and then the plugin registers, with no devices, after this long.
constexpr std::chrono::seconds kFirstAnswerWait{5};
// xpud answers ConfigureVirtualFunctions after the change and a discovery; the kernel probes
// every new function meanwhile.
constexpr std::chrono::seconds kReconfigureTimeout{60};
// The hand-over (k8s-shim/node_status/handover_taint.h): each write of the taint may retry
// conflicts this long; then the plugin waits this long at most for the kubelet to write
// allocatable (every 10 s by default). The chart's terminationGracePeriodSeconds (60) covers both
// and the settling below.
constexpr std::chrono::seconds kHandoverWrite{5};
constexpr std::chrono::seconds kHandoverWithdrawal{30};
// A stopping plugin that raised the taint keeps serving this long after: a pod the scheduler bound
// before it saw the taint reaches the kubelet's admission within about a second, and the kubelet
// cancels an Allocate under way when the streams end, rejecting its pod
// (UnexpectedAdmissionError, "the client connection is closing"; the real-node scenario 26 saw
// it in a rolling update). Then it waits for the calls under way, at most kDecisionsDrain more.
constexpr std::chrono::seconds kStoppingSettle{2};
constexpr std::chrono::seconds kDecisionsDrain{5};
// The longest the held-cards List waits for this plugin's Allocate calls to end
// (allocation_window.h); one takes milliseconds.
constexpr std::chrono::seconds kAllocationsWait{1};
// How often a stopping plugin looks whether the calls under way have ended.
constexpr std::chrono::milliseconds kDrainPoll{50};

}  // namespace

int run_device_plugin(const ShimOptions& options, const DevicePluginOptions& plugin,
                      CardFeed& cards, xpu::StopSignals& stop) {
  const std::filesystem::path plugin_dir = std::filesystem::absolute(plugin.plugin_dir);
  spdlog::info("starting: resource {}{}, plugin directory {}, xpud grace period {} s",
               plugin.resource_name, plugin.resource_per_model ? " (per model)" : "",
               plugin_dir.string(), plugin.xpud_grace_period.count());
  if (plugin.enable_sriov)
    spdlog::info("SR-IOV: virtual functions advertised on their own resource{}",
                 plugin.sriov_num_vfs > 0
                     ? fmt::format(", {} expected per card", plugin.sriov_num_vfs)
                     : std::string());
  if (plugin.reconfig_vxpu && plugin.sriov_num_vfs > 0)
    spdlog::info(
        "--reconfig-vxpu: asking xpud for {} virtual functions per physical card where the "
        "node's count differs (the host must allow it: [sriov] allow_cluster_reconfigure)",
        plugin.sriov_num_vfs);
  else if (plugin.reconfig_vxpu)
    spdlog::warn("--reconfig-vxpu changes nothing without --sriov-num-vfs N (N > 0)");
  if (!plugin.enable_sriov && plugin.sriov_num_vfs > 0)
    spdlog::warn("--sriov-num-vfs {} is ignored without --enable-sriov", plugin.sriov_num_vfs);
  if (plugin.enable_xpu_share && plugin.xpu_share_memory_unit_mib > 0)
    spdlog::info(
        "shared mode by memory: each card advertised as its memory in units of {} MiB; whole "
        "cards are not advertised; a container's bound is enforced only by the vendor's XPU "
        "container runtime ({})",
        plugin.xpu_share_memory_unit_mib, xpu::names::kVendorRuntimeMemoryLimitEnv);
  else if (plugin.enable_xpu_share)
    spdlog::info("shared mode: each card advertised {} times; whole cards are not advertised",
                 plugin.xpu_share_replicas);

  std::unique_ptr<NodeFeatureFile> features;
  if (!plugin.nfd_features_file.empty()) {
    features =
        std::make_unique<NodeFeatureFile>(std::filesystem::absolute(plugin.nfd_features_file));
    spdlog::info("node labels for node-feature-discovery go to {}", features->path().string());
  }
  const NodeFeatureOptions feature_options = node_feature_options(plugin, options.memory_unit);

  // On a thread of its own, so that a slow API server never delays a registration.
  std::optional<node_status::NodeStatusReporter> node_status;
  std::optional<node_status::NodeHandover> handover;
  if (plugin.node_status) {
    auto config = kube::api_config(plugin.api, kube::process_environment);
    if (!config) {
      spdlog::error("--node-status: {}", config.error());
      return 1;
    }
    auto transport = kube::CurlTransport::create(*config);
    if (!transport) {
      spdlog::error("--node-status: {}", transport.error());
      return 1;
    }
    spdlog::info("node status: node {}, API server {}", plugin.node_name, config->server);
    node_status.emplace(std::move(*transport), plugin.node_name,
                        std::string(node_status::kDevicePluginFieldManager),
                        plugin.xpud_grace_period);
    if (plugin.handover_taint) {
      auto handover_transport = kube::CurlTransport::create(*config);
      if (!handover_transport) {
        spdlog::error("--handover-taint: {}", handover_transport.error());
        return 1;
      }
      handover.emplace(std::move(*handover_transport), plugin.node_name,
                       std::string(node_status::kDevicePluginFieldManager));
    }
  }

  ResourceTracker tracker(resource_config(plugin), cards.state(), Clock::now());
  const auto allocations = std::make_shared<AllocationWindow>();
  std::unique_ptr<HeldCardsWatch> held;
  if (plugin.held_cards.refresh.count() > 0) {
    auto kubelet = std::make_shared<PodResourcesClient>(plugin.held_cards.podresources_socket,
                                                        kHeldCardsListDeadline);
    held = std::make_unique<HeldCardsWatch>(
        HeldCardsWatch::Options{.socket_path = plugin.held_cards.podresources_socket,
                                .refresh = plugin.held_cards.refresh,
                                .other_path = "DRA claims",
                                .before_list =
                                    [allocations] {
                                      allocations->wait_closed(AllocationWindow::Clock::now() +
                                                               kAllocationsWait);
                                    }},
        [kubelet] { return kubelet->list(); }, cards_held_through_dra);
  } else {
    spdlog::info("--held-cards-refresh 0: cards pods hold through DRA claims are not looked for");
  }
  std::uint64_t held_seen = 0;
  DevicePluginService::DecisionHooks hooks{.refresh = {}, .allocations = allocations};
  if (held)
    hooks.refresh = [&held, &tracker] {
      HeldCardsWatch::Snapshot fresh = held->fresh(Clock::now() + kHeldCardsFreshWait);
      tracker.set_held(std::move(fresh.held), fresh.generation, Clock::now());
    };
  // Declared after the tracker and the watch: its servers, whose hooks use them, stop first.
  KubeletConnector connector(KubeletConnector::Options{.plugin_dir = plugin_dir,
                                                       .memory_unit = options.memory_unit,
                                                       .cdi = plugin.cdi,
                                                       .hooks = std::move(hooks),
                                                       .stop_fd = stop.fd()});
  int status = 0;
  // Set at the stop: whether a new plugin serves the node already (below).
  bool succeeded = false;
  {
    const Clock::time_point register_anyway_at = Clock::now() + kFirstAnswerWait;
    std::atomic<bool> answered{false};
    // Declared after what its listener uses, so it stops calling back before they go away. The
    // feed then wakes this thread: a new resource may need a server, or may register now.
    const CardFeed::Watch watching = cards.watch(
        [&cards, &tracker, &features, &feature_options, &answered](Clock::time_point now) {
          // While xpud is there the view is xpud's own; while it is gone there are no labels to
          // render (the file keeps the last ones).
          if (features)
            if (auto labels = node_feature_labels(*cards.at(now).view, feature_options))
              features->set_content(render_feature_file(*labels));
          tracker.refresh(now);
          answered = true;
        });

    bool leftover_checked = false;
    std::optional<VfReconfiguration> reconfiguration;
    if (plugin.reconfig_vxpu && plugin.sriov_num_vfs > 0)
      reconfiguration.emplace(plugin.sriov_num_vfs, [&cards](unsigned index, unsigned count) {
        return cards.configure_virtual_functions(index, count, kReconfigureTimeout);
      });

    while (true) {
      // A signal that came during the last pass stops the role before it binds or registers
      // anything more.
      while (stop.take()) {
      }
      if (stop.stop_requested()) break;
      bool held_known = true;
      if (held) {
        HeldCardsWatch::Snapshot snapshot = held->snapshot();
        held_known = snapshot.answered;
        if (snapshot.generation != held_seen) {
          tracker.set_held(std::move(snapshot.held), snapshot.generation, Clock::now());
          held_seen = snapshot.generation;
        }
      }
      // Not before pod-resources answered once either (within its deadline): a card a claim
      // holds is never advertised.
      const bool may_register = held_known && (answered || Clock::now() >= register_anyway_at);
      connector.reconcile(tracker.feeds(), may_register);
      Clock::time_point deadline = Clock::now() + kIdleCheck;
      if (!may_register) deadline = std::min(deadline, register_anyway_at);
      // One card per pass: a stop signal never waits for more than one call.
      if (reconfiguration && reconfiguration->step(*cards.at(Clock::now()).view))
        deadline = Clock::now();
      if (auto next = connector.next_deadline()) deadline = std::min(deadline, *next);
      if (auto next = tracker.next_deadline()) deadline = std::min(deadline, *next);

      pollfd fds[] = {{stop.fd(), POLLIN, 0},
                      {connector.watch_fd(), POLLIN, 0},
                      {cards.wake_fd(), POLLIN, 0},
                      {held ? held->wake_fd() : -1, POLLIN, 0}};
      if (::poll(fds, std::size(fds), poll_timeout_ms(deadline)) < 0 && errno != EINTR) {
        spdlog::error("poll failed: {}", std::strerror(errno));
        status = 1;
        break;
      }
      if (fds[1].revents & POLLIN) connector.handle_directory_events();
      if (fds[2].revents & POLLIN) cards.clear_wake();
      if (held && (fds[3].revents & POLLIN)) held->clear_wake();
      tracker.refresh(Clock::now());
      // Every pass, not only after news: puts back a file someone removed, retries a failure.
      if (features) features->sync();
      // Across a hand-over between overlapping pods (a rolling update with a surge) both say the
      // node is served: they write the label as one field manager, so either saying otherwise
      // would take it away from under the one that serves.
      if (node_status) node_status->update(cards.at(Clock::now()), connector.node_served());
      if (handover && !leftover_checked && connector.serving()) {
        // A taint left by a plugin killed in the middle of its hand-over: this one serves now.
        leftover_checked = true;
        if (auto lowered = handover->lower(Clock::now() + kHandoverWrite); !lowered)
          spdlog::warn("{}", lowered.error());
      }
    }
    spdlog::info("stopping");
    // Displaced from every socket path: a new plugin serves the node already (a rolling update
    // with a surge), so the node's label, the hand-over and the feature file are that one's.
    succeeded = connector.displaced();
    if (succeeded)
      spdlog::info("another process serves every resource of this plugin: handing over");
    // The ready label first: the node stops being advertised as serving before it stops.
    if (node_status)
      node_status->stop(succeeded ? node_status::NodeStatusReporter::OnStop::kLeaveLabel
                                  : node_status::NodeStatusReporter::OnStop::kReleaseLabel);
    std::vector<std::string> resources;
    for (const auto& feed : tracker.feeds()) resources.push_back(feed->resource_name());
    std::vector<std::filesystem::path> sockets;
    for (const auto& feed : tracker.feeds()) sockets.push_back(plugin_dir / feed->socket_name());
    // No new pod is bound here once the scheduler sees the taint. The plugin stops right after:
    // its DaemonSet's next pod may start as soon as this one terminates, and the kubelet refuses
    // its registration while this one's streams are open ("device plugin already connected").
    bool tainted = false;
    if (handover && !succeeded) {
      // Without a successor there is no window to close, and an uninstall is about to take away
      // the rights to remove the taint again (handover_successor.h).
      const bool successor_expected = plugin.handover_successors.empty() ||
                                      !handover->successor(plugin.handover_successors).empty();
      if (!successor_expected) {
        spdlog::info(
            "no DaemonSet will serve node {} after this plugin: stopping without the "
            "hand-over taint",
            plugin.node_name);
      } else {
        auto raised = handover->raise(Clock::now() + kHandoverWrite);
        if (!raised) spdlog::warn("{}: stopping without the hand-over", raised.error());
        tainted = raised.ok();
      }
    }
    // Without the taint pods keep coming until the kubelet withdraws the cards: no wait ends that.
    if (tainted && connector.serving()) {
      const Clock::time_point settled = Clock::now() + kStoppingSettle;
      const Clock::time_point drained = settled + kDecisionsDrain;
      while (Clock::now() < drained && (Clock::now() < settled || connector.deciding()))
        std::this_thread::sleep_for(kDrainPoll);
      if (connector.deciding())
        spdlog::warn("stopping with an Allocate under way: the kubelet rejects its pod");
    }
    tracker.close_all();  // ends every ListAndWatch stream
    connector.stop();     // stops the servers, removes the sockets that are still ours
    if (tainted) {
      // A socket at one of our paths now is a new plugin's: the node's cards are served again.
      const auto successor_serves = [&sockets] {
        std::error_code error;
        return std::any_of(sockets.begin(), sockets.end(), [&error](const auto& path) {
          return std::filesystem::is_socket(path, error);
        });
      };
      if (auto lowered = handover->lower_after_withdrawal(resources, successor_serves,
                                                          Clock::now() + kHandoverWithdrawal);
          !lowered)
        spdlog::warn("{}", lowered.error());
    }
  }
  // After the watcher has stopped, so nothing writes the file again.
  if (features && !succeeded) features->remove();
  spdlog::info("stopped");
  return status;
}

}  // namespace shim
