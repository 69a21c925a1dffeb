#include "k8s-shim/node_status/node_api.h"

#include <nlohmann/json.hpp>

#include "k8s-shim/kube/api_call.h"
#include "k8s-shim/kube/api_names.h"
#include "k8s-shim/kube/json_fields.h"
#include "k8s-shim/node_status/xpu_condition.h"

namespace shim::node_status {
namespace {

namespace jf = kube::json_fields;
using nlohmann::json;

json node_object(std::string_view node) {
  return {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", node}}}};
}

// Invalid UTF-8 from xpud's reason text is replaced, not thrown on.
std::string dump(const json& body) {
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::string condition_apply_body(std::string_view node, const ConditionBody& condition) {
  json body = node_object(node);
  body["status"]["conditions"] = json::array({{
      {"type", kConditionType},
      {"status", condition.status},
      {"reason", condition.reason},
      {"message", condition.message},
      {"lastHeartbeatTime", condition.last_heartbeat_time},
      {"lastTransitionTime", condition.last_transition_time},
  }});
  return dump(body);
}

std::string ready_label_apply_body(std::string_view node, bool ready) {
  json body = node_object(node);
  // Not ready: the label left out, which removes it unless another manager applied it too.
  if (ready) body["metadata"]["labels"] = {{kReadyLabel, kReadyValue}};
  return dump(body);
}

xpu::Result<std::optional<ObservedCondition>> parse_xpu_condition(std::string_view node_json) {
  try {
    const json root = jf::parse_document(node_json);
    jf::expect_object(root, "(document)");
    if (const std::string kind = jf::string_or(root, "", "kind"); !kind.empty() && kind != "Node")
      return xpu::Error{"Node: expected kind Node, got \"" + kind + "\""};
    const json* status = jf::find(root, "", "status");
    if (!status) return std::optional<ObservedCondition>();
    jf::expect_object(*status, "status");
    const json* conditions = jf::find(*status, "status", "conditions");
    if (!conditions) return std::optional<ObservedCondition>();
    jf::expect_array(*conditions, "status.conditions");
    for (std::size_t i = 0; i < conditions->size(); ++i) {
      const std::string path = jf::element("status.conditions", i);
      const json& entry = jf::expect_object((*conditions)[i], path);
      if (jf::string_or(entry, path, "type") != kConditionType) continue;
      return std::optional<ObservedCondition>(ObservedCondition{
          .status = jf::string_or(entry, path, "status"),
          .last_transition_time = jf::string_or(entry, path, "lastTransitionTime")});
    }
    return std::optional<ObservedCondition>();
  } catch (const jf::FieldError& error) {
    return xpu::Error{std::string("Node: ") + error.what()};
  } catch (const json::exception& error) {
    return xpu::Error{std::string("Node: ") + error.what()};
  }
}

std::string NodeApi::node_path() const {
  return "/api/v1/nodes/" + kube::percent_encode(node_);
}

std::string NodeApi::apply_query() const {
  // Forced: the condition and the label are this role's to say, whoever wrote them last.
  return "?fieldManager=" + kube::percent_encode(field_manager_) + "&force=true";
}

kube::ApiResult<std::string> NodeApi::call(std::string method, std::string target, std::string body,
                                           std::string content_type) {
  if (!kube::is_dns_subdomain(node_))
    return kube::ApiError{
        .code = 0,
        .reason = "Invalid",
        .message = "node name \"" + node_ + "\" is not a DNS subdomain; nothing sent"};
  return kube::call(transport_, std::move(method), std::move(target), std::move(body),
                    std::move(content_type));
}

kube::ApiResult<std::optional<ObservedCondition>> NodeApi::get_xpu_condition() {
  const std::string target = node_path();
  auto body = call("GET", target, {}, {});
  if (!body) return body.error();
  auto parsed = parse_xpu_condition(body.value());
  if (!parsed)
    return kube::ApiError{
        .code = 0, .reason = "BadResponse", .message = "GET " + target + ": " + parsed.error()};
  return std::move(parsed).value();
}

kube::ApiResult<xpu::Ok> NodeApi::apply_condition(const ConditionBody& condition) {
  auto answer = call("PATCH", node_path() + "/status" + apply_query(),
                     condition_apply_body(node_, condition), "application/apply-patch+yaml");
  if (!answer) return answer.error();
  return xpu::Ok{};
}

kube::ApiResult<xpu::Ok> NodeApi::apply_ready_label(bool ready) {
  auto answer = call("PATCH", node_path() + apply_query(), ready_label_apply_body(node_, ready),
                     "application/apply-patch+yaml");
  if (!answer) return answer.error();
  return xpu::Ok{};
}

kube::ApiResult<HandoverView> NodeApi::get_handover_view() {
  const std::string target = node_path();
  auto body = call("GET", target, {}, {});
  if (!body) return body.error();
  auto parsed = parse_handover_view(body.value());
  if (!parsed)
    return kube::ApiError{
        .code = 0, .reason = "BadResponse", .message = "GET " + target + ": " + parsed.error()};
  return std::move(parsed).value();
}

kube::ApiResult<xpu::Ok> NodeApi::patch_node(std::string json_patch) {
  auto answer = call("PATCH", node_path() + "?fieldManager=" + kube::percent_encode(field_manager_),
                     std::move(json_patch), "application/json-patch+json");
  if (!answer) return answer.error();
  return xpu::Ok{};
}

}  // namespace shim::node_status
