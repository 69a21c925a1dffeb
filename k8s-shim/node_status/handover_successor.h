// Whether a device plugin that stops will have a successor on its node: the DaemonSets that could
// serve the node next (the plugin's own, whose next pod follows a rolling update or a relabelled
// node's return; the DRA driver's, after a switch to allocation=dra). The hand-over taint is
// raised only when one of them stays (handover_taint.h says why it exists): when the chart is
// uninstalled they are all gone, and so, a moment later, are the plugin's rights to remove the
// taint again, which left every node of the release tainted NoSchedule for every pod that did
// not tolerate it (the real-node suite saw it on a loaded machine). Without a successor there is
// no window to close anyway: a pod asking for a card waits Pending until some plugin serves.
//
// A DaemonSet stays when it is there and not being deleted (metadata.deletionTimestamp absent:
// a foreground deletion keeps the object until its pods are gone). An answer that cannot be
// read counts as no successor: the plugin then stops as it would without the taint, which costs
// at most a pod rejected in the kubelet's status period, never a node left tainted.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "k8s-shim/kube/http_transport.h"

namespace shim::node_status {

struct DaemonSetRef {
  std::string namespace_name;
  std::string name;

  bool operator==(const DaemonSetRef&) const = default;
};

// "NAMESPACE/NAME": a DNS label and a DNS subdomain. Errors name what is wrong.
xpu::Result<DaemonSetRef> parse_daemonset_ref(std::string_view text);

// Whether the DaemonSet in this GET answer stays (see above); an answer that is not a DaemonSet,
// or whose deletionTimestamp is not a string, is an error naming the field.
xpu::Result<bool> daemonset_stays(std::string_view daemonset_json);

// The first of `candidates` that stays, as "NAMESPACE/NAME"; empty when none does. What was
// asked and answered is logged, each failure naming the DaemonSet.
std::string staying_successor(kube::HttpTransport& transport,
                              const std::vector<DaemonSetRef>& candidates);

}  // namespace shim::node_status
