#include "xpuctl/oci_state.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "common/instance_owner.h"

namespace xpuctl {

xpu::Result<OciState> parse_oci_state(std::string_view state_json) {
  if (state_json.size() > kMaxOciStateBytes)
    return xpu::Error{"the container state on standard input is larger than " +
                      std::to_string(kMaxOciStateBytes) + " bytes"};
  const auto json = nlohmann::json::parse(state_json, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object())
    return xpu::Error{"standard input is not an OCI container state (a JSON object)"};
  OciState state;
  const auto id = json.find("id");
  if (id == json.end() || !id->is_string() || id->get_ref<const std::string&>().empty())
    return xpu::Error{"the container state on standard input has no \"id\" string"};
  state.id = id->get<std::string>();
  if (const auto pid = json.find("pid"); pid != json.end() && pid->is_number_integer()) {
    const auto value = pid->get<std::int64_t>();
    if (value > 0 && value <= std::numeric_limits<int>::max()) state.pid = static_cast<int>(value);
  }
  if (const auto bundle = json.find("bundle"); bundle != json.end() && bundle->is_string())
    state.bundle = bundle->get<std::string>();
  if (const auto annotations = json.find("annotations");
      annotations != json.end() && annotations->is_object())
    for (const auto& [key, value] : annotations->items())
      if (value.is_string()) state.annotations.emplace(key, value.get<std::string>());
  return state;
}

KubernetesRuntime runtime_of(const OciState& state) {
  // containerd's runtime v2 keeps each task's bundle in its state directory
  // (core/runtime/v2: "<state>/io.containerd.runtime.v2.task", then the containerd namespace and
  // the container id).
  constexpr std::string_view kContainerdTasks = "/io.containerd.runtime.v2.task/";
  if (const auto tasks = state.bundle.rfind(kContainerdTasks); tasks != std::string::npos) {
    std::string_view below = std::string_view(state.bundle).substr(tasks + kContainerdTasks.size());
    const auto slash = below.find('/');
    if (slash != std::string_view::npos && slash > 0 && below.substr(slash + 1) == state.id)
      return KubernetesRuntime::kContainerd;
  }
  // CRI-O's own annotation (pkg/annotations: ContainerID = "io.kubernetes.cri-o.ContainerID").
  if (auto crio = state.annotations.find("io.kubernetes.cri-o.ContainerID");
      crio != state.annotations.end() && crio->second == state.id)
    return KubernetesRuntime::kCrio;
  return KubernetesRuntime::kUnknown;
}

std::string owner_of_container(const OciState& state, std::string_view claim_namespace) {
  struct Keys {
    const char* namespace_key;
    const char* pod_key;
    const char* container_key;
  };
  Keys keys{};
  switch (runtime_of(state)) {
    case KubernetesRuntime::kContainerd:
      keys = {"io.kubernetes.cri.sandbox-namespace", "io.kubernetes.cri.sandbox-name",
              "io.kubernetes.cri.container-name"};
      break;
    case KubernetesRuntime::kCrio:
      keys = {"io.kubernetes.pod.namespace", "io.kubernetes.pod.name",
              "io.kubernetes.container.name"};
      break;
    case KubernetesRuntime::kUnknown:
      return {};
  }
  auto text = [&](const char* key) -> std::string {
    const auto value = state.annotations.find(key);
    return value != state.annotations.end() ? value->second : "";
  };
  const std::string namespace_name = text(keys.namespace_key);
  if (!claim_namespace.empty() && namespace_name != claim_namespace) return {};
  std::string owner = namespace_name + "/" + text(keys.pod_key) + "/" + text(keys.container_key);
  return xpu::names::is_instance_owner(owner) ? owner : std::string();
}

std::string instance_id_of_container(std::string_view container_id) {
  constexpr std::size_t kInstanceIdLength = 12;  // the vendor's CXPU_MAX_INSTANCE_ID_LEN
  return std::string(container_id.substr(0, kInstanceIdLength));
}

}  // namespace xpuctl
