#include "k8s-shim/node_status/node_handover.h"

#include <thread>

#include <spdlog/spdlog.h>

namespace shim::node_status {

NodeHandover::NodeHandover(std::unique_ptr<kube::HttpTransport> transport, std::string node,
                           std::string field_manager)
    : transport_(std::move(transport)),
      api_(*transport_, std::move(node), std::move(field_manager)) {}

xpu::Status NodeHandover::set(bool raise, Clock::time_point deadline) {
  const char* what = raise ? "adding" : "removing";
  while (true) {
    auto view = api_.get_handover_view();
    if (!view)
      return xpu::Error{std::string(what) + " the taint " + std::string(kHandoverTaintKey) + ": " +
                        view.error().message};
    const auto patch = handover_patch(view.value(), raise);
    if (!patch) return xpu::ok_status();
    auto written = api_.patch_node(*patch);
    if (written) {
      spdlog::info("node {}: taint {}:NoSchedule {}", api_.node(), kHandoverTaintKey,
                   raise ? "added" : "removed");
      return xpu::ok_status();
    }
    if (!written.error().conflict() || Clock::now() + kPollInterval > deadline)
      return xpu::Error{std::string(what) + " the taint " + std::string(kHandoverTaintKey) + ": " +
                        written.error().message};
    std::this_thread::sleep_for(kPollInterval);
  }
}

xpu::Status NodeHandover::raise(Clock::time_point deadline) {
  return set(true, deadline);
}

xpu::Status NodeHandover::lower(Clock::time_point deadline) {
  return set(false, deadline);
}

std::string NodeHandover::successor(const std::vector<DaemonSetRef>& candidates) {
  return staying_successor(*transport_, candidates);
}

xpu::Status NodeHandover::lower_after_withdrawal(const std::vector<std::string>& resources,
                                                 const std::function<bool()>& successor_serves,
                                                 Clock::time_point deadline) {
  const auto started = Clock::now();
  while (true) {
    if (successor_serves()) {
      spdlog::info("node {}: a new device plugin serves the node", api_.node());
      break;
    }
    auto view = api_.get_handover_view();
    if (view && resources_withdrawn(view.value(), resources)) {
      spdlog::info(
          "node {}: the kubelet withdrew the plugin's resources after {} ms", api_.node(),
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count());
      break;
    }
    if (Clock::now() + kPollInterval > deadline) {
      spdlog::warn(
          "node {}: the kubelet has not withdrawn the plugin's resources in {} ms ({}); "
          "removing the taint anyway",
          api_.node(),
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count(),
          view ? "allocatable still counts them" : view.error().message);
      break;
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  // The removal gets time of its own: it matters more than the wait.
  return lower(std::max(deadline, Clock::now() + std::chrono::seconds(5)));
}

}  // namespace shim::node_status
