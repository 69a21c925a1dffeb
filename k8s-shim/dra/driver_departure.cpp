#include "k8s-shim/dra/driver_departure.h"

namespace shim::dra {

std::vector<std::string> claims_allocated_here(const std::vector<ResourceClaim>& claims,
                                               std::string_view driver, std::string_view pool) {
  std::vector<std::string> here;
  for (const ResourceClaim& claim : claims) {
    if (!claim.allocated) continue;
    for (const DeviceAllocation& result : claim.results) {
      if (result.driver != driver || result.pool != pool) continue;
      here.push_back(claim.namespace_name + "/" + claim.name);
      break;
    }
  }
  return here;
}

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
    if (label != node->labels.end() && label->second == value) continue;
    std::string why = "node " + node->name;
    if (label == node->labels.end()) {
      why += " no longer has the label ";
      why += key;
      why += "=";
      why += value;
      why += " that DaemonSet ";
    } else {
      why += " has ";
      why += key;
      why += "=";
      why += label->second;
      why += ", DaemonSet ";
    }
    why += daemon_set->name;
    if (label != node->labels.end()) {
      why += " selects ";
      why += key;
      why += "=";
      why += value;
    } else {
      why += " selects";
    }
    return {true, std::move(why)};
  }
  std::string why = "DaemonSet " + daemon_set->name;
  why += " still selects node ";
  why += node->name;
  why += ": a new driver pod takes over the checkpoint";
  return {false, std::move(why)};
}

}  // namespace shim::dra
