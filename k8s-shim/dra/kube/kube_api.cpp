#include "k8s-shim/dra/kube/kube_api.h"

#include "k8s-shim/dra/kube/api_paths.h"
#include "k8s-shim/kube/api_call.h"
#include "k8s-shim/kube/api_names.h"

namespace shim::dra {

namespace {

kube::ApiError invalid(std::string_view what, std::string_view value, std::string_view rule) {
  return kube::ApiError{.code = 0,
                        .reason = "Invalid",
                        .message = std::string(what) + " \"" + std::string(value) + "\" is not " +
                                   std::string(rule) + "; nothing sent"};
}

// A 2xx answer we cannot read is reported like a failed call, with the method and the target.
template <typename T>
kube::ApiResult<T> decoded(xpu::Result<T> parsed, std::string_view method,
                           std::string_view target) {
  if (parsed) return std::move(parsed).value();
  return kube::ApiError{
      .code = 0,
      .reason = "BadResponse",
      .message = std::string(method) + " " + std::string(target) + ": " + parsed.error()};
}

}  // namespace

kube::ApiResult<std::string> KubeApi::call(std::string method, std::string target, std::string body,
                                           std::string content_type) {
  return kube::call(transport_, std::move(method), std::move(target), std::move(body),
                    std::move(content_type));
}

kube::ApiResult<ResourceClaim> KubeApi::get_resource_claim(std::string_view namespace_name,
                                                           std::string_view name) {
  if (!kube::is_dns_label(namespace_name))
    return invalid("namespace", namespace_name, "a DNS label");
  if (!kube::is_dns_subdomain(name)) return invalid("claim name", name, "a DNS subdomain");
  std::string target = resource_claim_path(namespace_name, name);
  auto body = call("GET", target, {});
  if (!body) return body.error();
  return decoded(parse_resource_claim(body.value()), "GET", target);
}

kube::ApiResult<xpu::Ok> KubeApi::apply_resource_claim_status(std::string_view namespace_name,
                                                              std::string_view name,
                                                              std::string_view field_manager,
                                                              std::string body) {
  if (!kube::is_dns_label(namespace_name))
    return invalid("namespace", namespace_name, "a DNS label");
  if (!kube::is_dns_subdomain(name)) return invalid("claim name", name, "a DNS subdomain");
  auto target = resource_claim_status_apply_target(namespace_name, name, field_manager);
  auto answer = call("PATCH", target, std::move(body), "application/apply-patch+yaml");
  if (!answer) return answer.error();
  return xpu::Ok{};
}

kube::ApiResult<std::vector<ResourceSlice>> KubeApi::list_resource_slices(std::string_view driver,
                                                                          std::string_view node) {
  if (!kube::is_dns_subdomain(driver)) return invalid("driver", driver, "a DNS subdomain");
  if (!kube::is_dns_subdomain(node)) return invalid("node name", node, "a DNS subdomain");
  std::string target = resource_slices_of_node_target(driver, node);
  auto body = call("GET", target, {});
  if (!body) return body.error();
  return decoded(parse_resource_slice_list(body.value()), "GET", target);
}

kube::ApiResult<ResourceSlice> KubeApi::create_resource_slice(const ResourceSlice& slice) {
  if (!slice.name.empty())
    return invalid("slice name", slice.name, "empty (create uses generateName)");
  if (!kube::is_dns_subdomain(slice.spec.node_name))
    return invalid("node name", slice.spec.node_name, "a DNS subdomain");
  std::string target = resource_slices_path();
  auto body = call("POST", target, resource_slice_to_json(slice));
  if (!body) return body.error();
  return decoded(parse_resource_slice(body.value()), "POST", target);
}

kube::ApiResult<ResourceSlice> KubeApi::update_resource_slice(const ResourceSlice& slice) {
  if (!kube::is_dns_subdomain(slice.name))
    return invalid("slice name", slice.name, "a DNS subdomain");
  // Without it the server would overwrite whatever is there: the 409 on a stale version is what
  // makes concurrent writers safe.
  if (slice.resource_version.empty()) return invalid("resourceVersion of slice", slice.name, "set");
  std::string target = resource_slice_path(slice.name);
  auto body = call("PUT", target, resource_slice_to_json(slice));
  if (!body) return body.error();
  return decoded(parse_resource_slice(body.value()), "PUT", target);
}

kube::ApiResult<xpu::Ok> KubeApi::delete_resource_slice(std::string_view name) {
  if (!kube::is_dns_subdomain(name)) return invalid("slice name", name, "a DNS subdomain");
  std::string target = resource_slice_path(name);
  auto body = call("DELETE", target, {});
  if (!body) return body.error();
  return xpu::Ok{};
}

kube::ApiResult<NodeLabels> KubeApi::get_node_labels(std::string_view name) {
  if (!kube::is_dns_subdomain(name)) return invalid("node name", name, "a DNS subdomain");
  std::string target = node_path(name);
  auto body = call("GET", target, {});
  if (!body) return body.error();
  return decoded(parse_node_labels(body.value()), "GET", target);
}

kube::ApiResult<DaemonSetPlacement> KubeApi::get_daemon_set_placement(
    std::string_view namespace_name, std::string_view name) {
  if (!kube::is_dns_label(namespace_name))
    return invalid("namespace", namespace_name, "a DNS label");
  if (!kube::is_dns_subdomain(name)) return invalid("DaemonSet name", name, "a DNS subdomain");
  std::string target = daemon_set_path(namespace_name, name);
  auto body = call("GET", target, {});
  if (!body) return body.error();
  return decoded(parse_daemon_set_placement(body.value()), "GET", target);
}

kube::ApiResult<std::vector<ResourceClaim>> KubeApi::list_resource_claims() {
  const std::string target = std::string(kResourceApiPrefix) + "/resourceclaims";
  auto body = call("GET", target, {});
  if (!body) return body.error();
  return decoded(parse_resource_claim_list(body.value()), "GET", target);
}

}  // namespace shim::dra
