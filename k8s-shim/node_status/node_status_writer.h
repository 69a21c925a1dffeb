// Keeps the node's XPUHealthy condition and its kunlunxin.com/xpu.ready label as the role says
// they should be (set_condition, set_ready), through NodeApi. The times follow the kubelet's own
// conditions (k8s.io/kubernetes pkg/kubelet/nodestatus/setters.go, e.g. MemoryPressureCondition):
// lastTransitionTime moves only when the status does (True, False, Unknown), not when the reason
// or message does, and is kept from the node's own condition across restarts of the role (read
// once before the first write); lastHeartbeatTime is the time of each write. Writes happen on a
// change and otherwise every heartbeat period (5 minutes, the kubelet's default
// nodeStatusReportFrequency and node-problem-detector's default --k8s-exporter-heartbeat-period),
// so the node object, which every node watcher in the cluster receives, does not churn; the
// label is applied again with each heartbeat, putting back one someone removed.
//
// Owned by one thread (NodeStatusReporter's); every call may block for the transport's timeout.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "k8s-shim/node_status/node_api.h"
#include "k8s-shim/node_status/xpu_condition.h"

namespace shim::node_status {

class NodeStatusWriter {
 public:
  using Clock = std::chrono::steady_clock;
  using WallClock = std::chrono::system_clock;

  struct Options {
    Clock::duration heartbeat = std::chrono::minutes(5);
    Clock::duration first_retry = std::chrono::seconds(1);
    Clock::duration max_retry = std::chrono::seconds(60);
  };

  explicit NodeStatusWriter(NodeApi& api) : NodeStatusWriter(api, Options{}) {}
  NodeStatusWriter(NodeApi& api, Options options) : api_(api), options_(options) {}

  // What the cards say now (nullopt: nothing known yet, nothing written); a new status counts as
  // changed at `wall_now`.
  void set_condition(const std::optional<XpuCondition>& condition, WallClock::time_point wall_now);
  // Whether the role serves: the label is applied, or released.
  void set_ready(bool ready);
  // Writes what is due; returns when it wants to be called again.
  Clock::time_point reconcile(Clock::time_point now, WallClock::time_point wall_now);
  // The label released now, for the role's stop (one call; whatever the backoff says). True when
  // the API server took it.
  bool release_ready();

  std::uint64_t writes() const { return writes_; }

 private:
  // False when the call failed (the pass stops, the backoff runs).
  bool read_current();
  bool write_condition(Clock::time_point now, WallClock::time_point wall_now);
  bool write_ready(Clock::time_point now);
  void failed(const kube::ApiError& error, std::string_view what, Clock::time_point now);

  NodeApi& api_;
  const Options options_;

  std::optional<XpuCondition> desired_;
  WallClock::time_point desired_since_{};  // when desired_'s status began, as seen here
  // What the node holds of the condition, once read (the outer optional) and after each write.
  std::optional<std::optional<ObservedCondition>> current_;
  std::optional<XpuCondition> written_;
  Clock::time_point condition_written_at_{};

  bool ready_ = false;
  std::optional<bool> ready_written_;
  Clock::time_point ready_written_at_{};

  Clock::time_point next_attempt_{};
  Clock::duration backoff_{};
  std::uint64_t writes_ = 0;
  bool forbidden_logged_ = false;
};

}  // namespace shim::node_status
