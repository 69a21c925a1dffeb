// The parts of a core/v1 Node and an apps/v1 DaemonSet the DRA driver reads when it is asked to
// stop: whether the DaemonSet that runs it still wants a pod on this node (then a replacement is
// coming) or not (the driver is leaving the node: it drains first).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "common/result.h"

namespace shim::dra {

struct NodeLabels {
  std::string name;
  std::map<std::string, std::string> labels;  // metadata.labels
};

struct DaemonSetPlacement {
  std::string name;
  bool deleting = false;                             // metadata.deletionTimestamp set
  std::map<std::string, std::string> node_selector;  // spec.template.spec.nodeSelector
  bool has_node_affinity = false;  // spec.template.spec.affinity.nodeAffinity present
};

// Unknown fields are ignored; a known field of the wrong JSON type is an error naming its path.
// Never throws.
xpu::Result<NodeLabels> parse_node_labels(std::string_view json);
xpu::Result<DaemonSetPlacement> parse_daemon_set_placement(std::string_view json);

}  // namespace shim::dra
