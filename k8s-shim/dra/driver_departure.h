// When the DRA driver is told to stop while claims it prepared are still held, whether it is
// being replaced on this node (a rolling update, a restart: the next pod takes over its
// checkpoint, so it may go at once) or leaving it (the chart switched the node to the device
// plugin, dra.nodeSelector no longer picks the node, the chart was uninstalled: then nobody
// would unprepare those claims, and their pods could never be deleted). The kubelet does not say
// which; the DaemonSet that runs the driver does.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "k8s-shim/dra/kube/resource_claim.h"
#include "k8s-shim/dra/kube/workload_objects.h"
#include "k8s-shim/kube/api_error.h"

namespace shim::dra {

struct Departure {
  bool leaving = false;
  std::string why;  // for the log
};

// Leaving when the DaemonSet is gone or being deleted, when its pod template's nodeSelector no
// longer matches the node's labels, and when either cannot be read (a removed chart also removes
// the driver's service account, whose token then stops working): draining when in doubt costs
// time, going when in doubt costs pods that can never be deleted. A nodeAffinity is not
// evaluated (the chart's DRA DaemonSet places by nodeSelector only): it counts as matching.
// The claims (namespace/name) the scheduler allocated from this node's pool of this driver: a
// leaving driver waits for these too, since a pod bound with one is prepared by this driver or
// never (its kubelet may not have asked yet when the driver is told to stop).
std::vector<std::string> claims_allocated_here(const std::vector<ResourceClaim>& claims,
                                               std::string_view driver, std::string_view pool);

Departure judge_departure(const kube::ApiResult<DaemonSetPlacement>& daemon_set,
                          const kube::ApiResult<NodeLabels>& node);

}  // namespace shim::dra
