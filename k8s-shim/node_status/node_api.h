// The calls the node-status writer makes on its node, over the shared API client (k8s-shim/kube):
// read the node's XPUHealthy condition, and server-side apply of the condition (to the status
// subresource) and of the ready label (to the node itself), each as the role's field manager.
//
// Why server-side apply: conditions are a map list keyed by type in v1 (+listType=map,
// +listMapKey=type on NodeStatus.Conditions), so an apply that names only XPUHealthy owns only
// that entry; the kubelet's and node-problem-detector's conditions are theirs and stay as they
// are. And for the label, an apply that leaves it out removes it only when no other manager
// applied it too: the device plugin and the DRA driver each apply it under their own field
// manager, so the role that stops during a switch of allocation mode cannot take away the label
// the other role has just set (the two share the field while both hold it).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "k8s-shim/kube/api_error.h"
#include "k8s-shim/kube/http_transport.h"
#include "k8s-shim/node_status/handover_taint.h"

namespace shim::node_status {

inline constexpr std::string_view kReadyLabel = "kunlunxin.com/xpu.ready";
inline constexpr std::string_view kReadyValue = "true";

// What the node says of the condition now: enough to keep its lastTransitionTime.
struct ObservedCondition {
  std::string status;
  std::string last_transition_time;  // as the API gave it

  bool operator==(const ObservedCondition&) const = default;
};

// The condition as applied: XpuCondition's fields and the two times (RFC 3339).
struct ConditionBody {
  std::string status, reason, message;
  std::string last_heartbeat_time, last_transition_time;
};

// Apply bodies (application/apply-patch+yaml; JSON is YAML).
std::string condition_apply_body(std::string_view node, const ConditionBody& condition);
std::string ready_label_apply_body(std::string_view node, bool ready);
// The node's XPUHealthy condition from a Node object's JSON; nullopt when it has none. An answer
// that is not a Node, or whose conditions are malformed, is an error naming the field.
xpu::Result<std::optional<ObservedCondition>> parse_xpu_condition(std::string_view node_json);

class NodeApi {
 public:
  // `node` and `field_manager` are checked by the caller (a DNS subdomain; printable).
  NodeApi(kube::HttpTransport& transport, std::string node, std::string field_manager)
      : transport_(transport), node_(std::move(node)), field_manager_(std::move(field_manager)) {}

  // GET /api/v1/nodes/{node}
  kube::ApiResult<std::optional<ObservedCondition>> get_xpu_condition();
  // PATCH /api/v1/nodes/{node}/status?fieldManager=..&force=true
  kube::ApiResult<xpu::Ok> apply_condition(const ConditionBody& condition);
  // PATCH /api/v1/nodes/{node}?fieldManager=..&force=true
  kube::ApiResult<xpu::Ok> apply_ready_label(bool ready);
  // GET /api/v1/nodes/{node}: what the hand-over reads (handover_taint.h).
  kube::ApiResult<HandoverView> get_handover_view();
  // PATCH /api/v1/nodes/{node}?fieldManager=.., a JSON patch (handover_patch()).
  kube::ApiResult<xpu::Ok> patch_node(std::string json_patch);

  const std::string& node() const { return node_; }

 private:
  kube::ApiResult<std::string> call(std::string method, std::string target, std::string body,
                                    std::string content_type);
  std::string node_path() const;
  std::string apply_query() const;

  kube::HttpTransport& transport_;
  const std::string node_;
  const std::string field_manager_;
};

}  // namespace shim::node_status
