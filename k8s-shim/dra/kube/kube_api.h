// Typed calls this driver makes (resource.k8s.io/v1; and reads of its node and its DaemonSet), over
// an HttpTransport. Inputs that end up in a path or query are validated before anything is sent;
// every failure is an ApiError naming the method and the target.
#pragma once

#include <string_view>
#include <vector>

#include "common/result.h"
#include "k8s-shim/dra/kube/resource_claim.h"
#include "k8s-shim/dra/kube/resource_slice.h"
#include "k8s-shim/dra/kube/workload_objects.h"
#include "k8s-shim/kube/api_error.h"
#include "k8s-shim/kube/http_transport.h"

namespace shim::dra {

// Holds no state of its own: as thread-safe as the transport it uses.
class KubeApi {
 public:
  explicit KubeApi(kube::HttpTransport& transport) : transport_(transport) {}

  // GET /apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{name}
  kube::ApiResult<ResourceClaim> get_resource_claim(std::string_view namespace_name,
                                                    std::string_view name);
  // PATCH .../resourceclaims/{name}/status, server-side apply of `body` (whose metadata names the
  // claim, with its UID) as field manager `field_manager`.
  kube::ApiResult<xpu::Ok> apply_resource_claim_status(std::string_view namespace_name,
                                                       std::string_view name,
                                                       std::string_view field_manager,
                                                       std::string body);
  // GET /apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.driver=..,spec.nodeName=..
  kube::ApiResult<std::vector<ResourceSlice>> list_resource_slices(std::string_view driver,
                                                                   std::string_view node);
  // POST; the slice must have no name (generateName is used). Returns the created object.
  kube::ApiResult<ResourceSlice> create_resource_slice(const ResourceSlice& slice);
  // PUT /resourceslices/{name} with metadata.resourceVersion (required): a stale one is a 409.
  kube::ApiResult<ResourceSlice> update_resource_slice(const ResourceSlice& slice);
  // DELETE /resourceslices/{name}
  kube::ApiResult<xpu::Ok> delete_resource_slice(std::string_view name);

  // GET /apis/resource.k8s.io/v1/resourceclaims (every namespace)
  kube::ApiResult<std::vector<ResourceClaim>> list_resource_claims();
  // GET /api/v1/nodes/{name}
  kube::ApiResult<NodeLabels> get_node_labels(std::string_view name);
  // GET /apis/apps/v1/namespaces/{ns}/daemonsets/{name}
  kube::ApiResult<DaemonSetPlacement> get_daemon_set_placement(std::string_view namespace_name,
                                                               std::string_view name);

 private:
  // Sends and returns the body of a 2xx answer; anything else becomes an ApiError.
  kube::ApiResult<std::string> call(std::string method, std::string target, std::string body,
                                    std::string content_type = {});

  kube::HttpTransport& transport_;
};

}  // namespace shim::dra
