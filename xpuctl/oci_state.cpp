#include "xpuctl/oci_state.h"

#include <nlohmann/json.hpp>

#include "common/instance_owner.h"

namespace xpuctl {

xpu::Result<std::string> container_id_from_oci_state(std::string_view state_json) {
  if (state_json.size() > kMaxOciStateBytes)
    return xpu::Error{"the container state on standard input is larger than " +
                      std::to_string(kMaxOciStateBytes) + " bytes"};
  const auto state = nlohmann::json::parse(state_json, nullptr, /*allow_exceptions=*/false);
  if (state.is_discarded() || !state.is_object())
    return xpu::Error{"standard input is not an OCI container state (a JSON object)"};
  const auto id = state.find("id");
  if (id == state.end() || !id->is_string() || id->get_ref<const std::string&>().empty())
    return xpu::Error{"the container state on standard input has no \"id\" string"};
  return id->get<std::string>();
}

std::string owner_from_oci_state(std::string_view state_json) {
  if (state_json.size() > kMaxOciStateBytes) return {};
  const auto state = nlohmann::json::parse(state_json, nullptr, /*allow_exceptions=*/false);
  if (state.is_discarded() || !state.is_object()) return {};
  const auto annotations = state.find("annotations");
  if (annotations == state.end() || !annotations->is_object()) return {};
  auto text = [&](const char* key) -> std::string {
    const auto value = annotations->find(key);
    return value != annotations->end() && value->is_string() ? value->get<std::string>() : "";
  };
  struct Keys {
    const char* namespace_key;
    const char* pod_key;
    const char* container_key;
  };
  for (const Keys& keys :
       {Keys{"io.kubernetes.cri.sandbox-namespace", "io.kubernetes.cri.sandbox-name",
             "io.kubernetes.cri.container-name"},
        Keys{"io.kubernetes.pod.namespace", "io.kubernetes.pod.name",
             "io.kubernetes.container.name"}}) {
    std::string owner =
        text(keys.namespace_key) + "/" + text(keys.pod_key) + "/" + text(keys.container_key);
    if (xpu::names::is_instance_owner(owner)) return owner;
  }
  return {};
}

std::string instance_id_of_container(std::string_view container_id) {
  constexpr std::size_t kInstanceIdLength = 12;  // the vendor's CXPU_MAX_INSTANCE_ID_LEN
  return std::string(container_id.substr(0, kInstanceIdLength));
}

}  // namespace xpuctl
