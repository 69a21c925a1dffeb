// The device plugin's hand-over of its node, step by step (handover_taint.h says why): raise the
// taint, and once the kubelet has withdrawn the plugin's resources, lower it. Blocking calls made
// on the role's thread when it stops (it has nothing else left to do then) and once after it
// serves (a taint left by a plugin that was killed mid-way).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "k8s-shim/kube/http_transport.h"
#include "k8s-shim/node_status/handover_successor.h"
#include "k8s-shim/node_status/node_api.h"

namespace shim::node_status {

class NodeHandover {
 public:
  using Clock = std::chrono::steady_clock;

  // Between reads of the node while waiting for the kubelet, and after a conflict.
  static constexpr std::chrono::milliseconds kPollInterval{500};

  NodeHandover(std::unique_ptr<kube::HttpTransport> transport, std::string node,
               std::string field_manager);

  // Adds the taint; a concurrent change of the node (409) is read and tried again until
  // `deadline`. Errors name the call.
  xpu::Status raise(Clock::time_point deadline);
  // Waits until the node's allocatable counts none of `resources`, or `successor_serves()` says a
  // new plugin has taken over (then the cards stay, served), or `deadline` passes (the kubelet
  // may be gone), then removes the taint.
  xpu::Status lower_after_withdrawal(const std::vector<std::string>& resources,
                                     const std::function<bool()>& successor_serves,
                                     Clock::time_point deadline);
  // Removes the taint if it is there.
  xpu::Status lower(Clock::time_point deadline);
  // The first of `candidates` that stays, as "NAMESPACE/NAME"; empty when none does
  // (handover_successor.h).
  std::string successor(const std::vector<DaemonSetRef>& candidates);

 private:
  xpu::Status set(bool raise, Clock::time_point deadline);

  std::unique_ptr<kube::HttpTransport> transport_;
  NodeApi api_;
};

}  // namespace shim::node_status
