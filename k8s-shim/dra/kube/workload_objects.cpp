#include "k8s-shim/dra/kube/workload_objects.h"

#include "k8s-shim/kube/json_fields.h"

namespace shim::dra {

namespace jf = kube::json_fields;

namespace {

// A map of strings (labels, nodeSelector): absent is empty; any value that is no string is an
// error naming it.
std::map<std::string, std::string> string_map(const nlohmann::json& parent, std::string_view path,
                                              std::string_view key) {
  std::map<std::string, std::string> out;
  const auto* members = jf::find(parent, path, key);
  if (!members) return out;
  const std::string map_path = jf::child(path, key);
  jf::expect_object(*members, map_path);
  for (const auto& [name, value] : members->items()) {
    if (!value.is_string())
      throw jf::FieldError(jf::child(map_path, name) + ": expected a string, got " +
                           std::string(value.type_name()));
    out.emplace(name, value.get<std::string>());
  }
  return out;
}

// Reads a document of `kind` into a T: `fill(root, metadata or nullptr, out)` reads the fields;
// every error, whatever throws it, comes back naming the kind.
template <typename T, typename Fill>
xpu::Result<T> parse_object(std::string_view json, std::string_view kind, Fill fill) {
  const std::string prefix = std::string(kind) + ": ";
  try {
    nlohmann::json root = jf::parse_document(json);
    jf::expect_object(root, "(document)");
    const std::string found = jf::string_or(root, "", "kind");
    if (!found.empty() && found != kind)
      return xpu::Error{prefix + "expected a " + std::string(kind) + ", got kind \"" + found +
                        "\""};
    const nlohmann::json* metadata = jf::find(root, "", "metadata");
    if (metadata) jf::expect_object(*metadata, "metadata");
    T out;
    fill(root, metadata, out);
    return out;
  } catch (const jf::FieldError& error) {
    return xpu::Error{prefix + error.what()};
  } catch (const nlohmann::json::exception& error) {
    return xpu::Error{prefix + error.what()};
  }
}

}  // namespace

xpu::Result<NodeLabels> parse_node_labels(std::string_view json) {
  return parse_object<NodeLabels>(
      json, "Node", [](const nlohmann::json&, const nlohmann::json* metadata, NodeLabels& node) {
        if (!metadata) return;
        node.name = jf::string_or(*metadata, "metadata", "name");
        node.labels = string_map(*metadata, "metadata", "labels");
      });
}

xpu::Result<DaemonSetPlacement> parse_daemon_set_placement(std::string_view json) {
  return parse_object<DaemonSetPlacement>(
      json, "DaemonSet",
      [](const nlohmann::json& root, const nlohmann::json* metadata,
         DaemonSetPlacement& placement) {
        if (metadata) {
          placement.name = jf::string_or(*metadata, "metadata", "name");
          placement.deleting = !jf::string_or(*metadata, "metadata", "deletionTimestamp").empty();
        }
        const auto* spec = jf::find(root, "", "spec");
        if (!spec) return;
        jf::expect_object(*spec, "spec");
        const auto* pod_template = jf::find(*spec, "spec", "template");
        if (!pod_template) return;
        jf::expect_object(*pod_template, "spec.template");
        const std::string pod_path = "spec.template.spec";
        const auto* pod_spec = jf::find(*pod_template, "spec.template", "spec");
        if (!pod_spec) return;
        jf::expect_object(*pod_spec, pod_path);
        placement.node_selector = string_map(*pod_spec, pod_path, "nodeSelector");
        const std::string affinity_path = jf::child(pod_path, "affinity");
        if (const auto* affinity = jf::find(*pod_spec, pod_path, "affinity")) {
          jf::expect_object(*affinity, affinity_path);
          placement.has_node_affinity =
              jf::find(*affinity, affinity_path, "nodeAffinity") != nullptr;
        }
      });
}

}  // namespace shim::dra
