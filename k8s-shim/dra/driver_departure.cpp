#include "k8s-shim/dra/driver_departure.h"

namespace shim::dra {

Departure judge_departure(const kube::ApiResult<DaemonSetPlacement>& daemon_set,
                          const kube::ApiResult<NodeLabels>& node) {
  if (!daemon_set) {
    if (daemon_set.error().not_found()) return {true, "its DaemonSet is gone"};
    return {true, "its DaemonSet cannot be read (" + daemon_set.error().message + ")"};
  }
  if (daemon_set->deleting)
    return {true, "its DaemonSet " + daemon_set->name + " is being deleted"};
  if (!node) return {true, "its node cannot be read (" + node.error().message + ")"};
  for (const auto& [key, value] : daemon_set->node_selector) {
    auto label = node->labels.find(key);
    if (label == node->labels.end())
      return {true, "node " + node->name + " no longer has the label " + key + "=" + value +
                        " that DaemonSet " + daemon_set->name + " selects"};
    if (label->second != value)
      return {true, "node " + node->name + " has " + key + "=" + label->second + ", DaemonSet " +
                        daemon_set->name + " selects " + key + "=" + value};
  }
  return {false, "DaemonSet " + daemon_set->name + " still selects node " + node->name +
                     ": a new driver pod takes over the checkpoint"};
}

}  // namespace shim::dra
