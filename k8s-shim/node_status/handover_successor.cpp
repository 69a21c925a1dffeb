#include "k8s-shim/node_status/handover_successor.h"

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "k8s-shim/kube/api_call.h"
#include "k8s-shim/kube/api_names.h"

namespace shim::node_status {

xpu::Result<DaemonSetRef> parse_daemonset_ref(std::string_view text) {
  const auto slash = text.find('/');
  if (slash == std::string_view::npos)
    return xpu::Error{"'" + std::string(text) + "' is not NAMESPACE/NAME"};
  DaemonSetRef ref{std::string(text.substr(0, slash)), std::string(text.substr(slash + 1))};
  if (!kube::is_dns_label(ref.namespace_name))
    return xpu::Error{"namespace '" + ref.namespace_name + "' is not a DNS label"};
  if (!kube::is_dns_subdomain(ref.name))
    return xpu::Error{"name '" + ref.name + "' is not a DNS subdomain"};
  return ref;
}

xpu::Result<bool> daemonset_stays(std::string_view daemonset_json) {
  const auto object = nlohmann::json::parse(daemonset_json, nullptr, /*allow_exceptions=*/false);
  if (!object.is_object()) return xpu::Error{"the answer is not a JSON object"};
  const auto kind = object.find("kind");
  if (kind == object.end() || *kind != "DaemonSet")
    return xpu::Error{"kind: the answer is not a DaemonSet"};
  const auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object())
    return xpu::Error{"metadata: missing or not an object"};
  const auto deletion = metadata->find("deletionTimestamp");
  if (deletion == metadata->end() || deletion->is_null()) return true;
  if (!deletion->is_string()) return xpu::Error{"metadata.deletionTimestamp: not a string"};
  return false;
}

std::string staying_successor(kube::HttpTransport& transport,
                              const std::vector<DaemonSetRef>& candidates) {
  for (const auto& candidate : candidates) {
    std::string named = candidate.namespace_name + "/" + candidate.name;
    auto answer = kube::call(
        transport, "GET",
        "/apis/apps/v1/namespaces/" + candidate.namespace_name + "/daemonsets/" + candidate.name,
        {}, {});
    if (!answer) {
      if (answer.error().not_found())
        spdlog::info("hand-over: DaemonSet {} is gone", named);
      else
        spdlog::warn("hand-over: DaemonSet {}: {}", named, answer.error().message);
      continue;
    }
    auto stays = daemonset_stays(answer.value());
    if (!stays) {
      spdlog::warn("hand-over: DaemonSet {}: {}", named, stays.error());
      continue;
    }
    if (*stays) {
      spdlog::info("hand-over: DaemonSet {} stays and serves the node next", named);
      return named;
    }
    spdlog::info("hand-over: DaemonSet {} is being deleted", named);
  }
  return {};
}

}  // namespace shim::node_status
