#include "k8s-shim/dra/kube/api_paths.h"

#include "k8s-shim/kube/api_names.h"

namespace shim::dra {

using kube::percent_encode;

std::string resource_claim_path(std::string_view namespace_name, std::string_view name) {
  return std::string(kResourceApiPrefix) + "/namespaces/" + percent_encode(namespace_name) +
         "/resourceclaims/" + percent_encode(name);
}

std::string resource_claim_status_apply_target(std::string_view namespace_name,
                                               std::string_view name,
                                               std::string_view field_manager) {
  return resource_claim_path(namespace_name, name) +
         "/status?fieldManager=" + percent_encode(field_manager) + "&force=true";
}

std::string resource_slices_path() {
  return std::string(kResourceApiPrefix) + "/resourceslices";
}

std::string resource_slice_path(std::string_view name) {
  return resource_slices_path() + "/" + percent_encode(name);
}

std::string resource_slices_of_node_target(std::string_view driver, std::string_view node) {
  std::string selector =
      "spec.driver=" + std::string(driver) + ",spec.nodeName=" + std::string(node);
  return resource_slices_path() + "?fieldSelector=" + percent_encode(selector);
}

std::string node_path(std::string_view name) {
  return "/api/v1/nodes/" + percent_encode(name);
}

std::string daemon_set_path(std::string_view namespace_name, std::string_view name) {
  return "/apis/apps/v1/namespaces/" + percent_encode(namespace_name) + "/daemonsets/" +
         percent_encode(name);
}

}  // namespace shim::dra
