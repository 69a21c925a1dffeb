#include "k8s-shim/node_status/node_status_options.h"

#include <string>

#include "k8s-shim/node_status/node_api.h"
#include "k8s-shim/node_status/xpu_condition.h"

namespace shim::node_status {

void add_node_status_flag(xpu::CommandLine& cli, bool& enabled) {
  cli.add_flag("node-status", &enabled,
               "keep this node's condition " + std::string(kConditionType) +
                   " (the cards' health) and, while the role serves, its label " +
                   std::string(kReadyLabel) + "=" + std::string(kReadyValue) +
                   " (needs get and patch on nodes and patch on nodes/status)");
}

}  // namespace shim::node_status
