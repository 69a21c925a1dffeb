#include "k8s-shim/node_status/handover_taint.h"

#include <nlohmann/json.hpp>

#include "k8s-shim/kube/json_fields.h"

namespace shim::node_status {

namespace jf = kube::json_fields;
using nlohmann::json;

xpu::Result<HandoverView> parse_handover_view(std::string_view node_json) {
  try {
    const json root = jf::parse_document(node_json);
    jf::expect_object(root, "(document)");
    if (const std::string kind = jf::string_or(root, "", "kind"); !kind.empty() && kind != "Node")
      return xpu::Error{"Node: expected kind Node, got \"" + kind + "\""};
    HandoverView view;
    if (const json* metadata = jf::find(root, "", "metadata")) {
      jf::expect_object(*metadata, "metadata");
      view.resource_version = jf::string_or(*metadata, "metadata", "resourceVersion");
    }
    if (view.resource_version.empty())
      return xpu::Error{"Node: metadata.resourceVersion is missing"};
    if (const json* spec = jf::find(root, "", "spec")) {
      jf::expect_object(*spec, "spec");
      if (const json* taints = jf::find(*spec, "spec", "taints")) {
        jf::expect_array(*taints, "spec.taints");
        for (std::size_t i = 0; i < taints->size(); ++i) {
          const std::string path = jf::element("spec.taints", i);
          const json& taint = jf::expect_object((*taints)[i], path);
          if (jf::string_or(taint, path, "key") == kHandoverTaintKey) view.tainted = true;
        }
        view.taints_json = taints->dump(-1, ' ', false, json::error_handler_t::replace);
      }
    }
    if (const json* status = jf::find(root, "", "status")) {
      jf::expect_object(*status, "status");
      if (const json* allocatable = jf::find(*status, "status", "allocatable")) {
        jf::expect_object(*allocatable, "status.allocatable");
        for (const auto& [name, value] : allocatable->items())
          view.allocatable[name] = jf::string_or(*allocatable, "status.allocatable", name);
      }
    }
    return view;
  } catch (const jf::FieldError& error) {
    return xpu::Error{std::string("Node: ") + error.what()};
  } catch (const json::exception& error) {
    return xpu::Error{std::string("Node: ") + error.what()};
  }
}

std::optional<std::string> handover_patch(const HandoverView& view, bool raise) {
  if (view.tainted == raise) return std::nullopt;
  json taints = json::array();
  for (const json& taint : json::parse(view.taints_json))
    if (!taint.is_object() || taint.value("key", "") != kHandoverTaintKey) taints.push_back(taint);
  if (raise) taints.push_back({{"key", kHandoverTaintKey}, {"effect", "NoSchedule"}});
  // Setting metadata.resourceVersion makes the patch conditional: the API server answers 409
  // when the node changed since it was read, instead of overwriting another writer's taints.
  const json patch = json::array(
      {{{"op", "replace"}, {"path", "/metadata/resourceVersion"}, {"value", view.resource_version}},
       {{"op", "add"}, {"path", "/spec/taints"}, {"value", std::move(taints)}}});
  return patch.dump();
}

bool resources_withdrawn(const HandoverView& view, const std::vector<std::string>& resources) {
  for (const std::string& resource : resources) {
    auto it = view.allocatable.find(resource);
    if (it != view.allocatable.end() && it->second != "0") return false;
  }
  return true;
}

}  // namespace shim::node_status
