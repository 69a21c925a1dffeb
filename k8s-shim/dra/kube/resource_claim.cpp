#include "k8s-shim/dra/kube/resource_claim.h"

#include "k8s-shim/dra/kube/quantity.h"
#include "k8s-shim/kube/json_fields.h"

namespace shim::dra {

namespace jf = kube::json_fields;

xpu::Result<ResourceClaim> parse_resource_claim(std::string_view json) {
  try {
    nlohmann::json root = jf::parse_document(json);
    jf::expect_object(root, "(document)");
    std::string kind = jf::string_or(root, "", "kind");
    if (!kind.empty() && kind != "ResourceClaim")
      return xpu::Error{"expected a ResourceClaim, got kind \"" + kind + "\""};

    ResourceClaim claim;
    if (const auto* metadata = jf::find(root, "", "metadata")) {
      jf::expect_object(*metadata, "metadata");
      claim.name = jf::string_or(*metadata, "metadata", "name");
      claim.namespace_name = jf::string_or(*metadata, "metadata", "namespace");
      claim.uid = jf::string_or(*metadata, "metadata", "uid");
      if (const auto* annotations = jf::find(*metadata, "metadata", "annotations")) {
        const std::string path = jf::child("metadata", "annotations");
        jf::expect_object(*annotations, path);
        claim.pod_claim_name = jf::string_or(*annotations, path, kPodClaimNameAnnotation);
      }
    }
    const auto* status = jf::find(root, "", "status");
    if (!status) return claim;
    jf::expect_object(*status, "status");
    const auto* allocation = jf::find(*status, "status", "allocation");
    if (!allocation) return claim;
    jf::expect_object(*allocation, "status.allocation");
    claim.allocated = true;
    const auto* devices = jf::find(*allocation, "status.allocation", "devices");
    if (!devices) return claim;
    jf::expect_object(*devices, "status.allocation.devices");
    const auto* results = jf::find(*devices, "status.allocation.devices", "results");
    if (!results) return claim;
    const std::string results_path = "status.allocation.devices.results";
    jf::expect_array(*results, results_path);
    for (std::size_t i = 0; i < results->size(); ++i) {
      const std::string path = jf::element(results_path, i);
      const auto& entry = jf::expect_object((*results)[i], path);
      DeviceAllocation allocation{
          .request = jf::string_or(entry, path, "request"),
          .driver = jf::string_or(entry, path, "driver"),
          .pool = jf::string_or(entry, path, "pool"),
          .device = jf::string_or(entry, path, "device"),
          .admin_access = jf::bool_or(entry, path, "adminAccess", false),
          .share_id = jf::string_or(entry, path, "shareID"),
          .consumed_memory = std::nullopt,
      };
      if (const auto* consumed = jf::find(entry, path, "consumedCapacity")) {
        const std::string consumed_path = jf::child(path, "consumedCapacity");
        jf::expect_object(*consumed, consumed_path);
        if (jf::find(*consumed, consumed_path, "memory")) {
          const std::string memory = jf::string_or(*consumed, consumed_path, "memory");
          auto bytes = parse_quantity(memory);
          if (!bytes)
            return xpu::Error{"ResourceClaim: " + jf::child(consumed_path, "memory") + ": " +
                              bytes.error()};
          allocation.consumed_memory = *bytes;
        }
      }
      claim.results.push_back(std::move(allocation));
    }
    return claim;
  } catch (const jf::FieldError& error) {
    return xpu::Error{std::string("ResourceClaim: ") + error.what()};
  } catch (const nlohmann::json::exception& error) {
    return xpu::Error{std::string("ResourceClaim: ") + error.what()};
  }
}

xpu::Result<std::vector<ResourceClaim>> parse_resource_claim_list(std::string_view json) {
  std::vector<ResourceClaim> claims;
  try {
    const nlohmann::json root = jf::parse_document(json);
    jf::expect_object(root, "(document)");
    const auto* items = jf::find(root, "", "items");
    if (!items) return claims;
    jf::expect_array(*items, "items");
    for (std::size_t i = 0; i < items->size(); ++i) {
      auto claim = parse_resource_claim((*items)[i].dump());
      if (!claim) return xpu::Error{jf::element("items", i) + ": " + claim.error()};
      claims.push_back(std::move(claim).value());
    }
    return claims;
  } catch (const jf::FieldError& error) {
    return xpu::Error{std::string("ResourceClaimList: ") + error.what()};
  } catch (const nlohmann::json::exception& error) {
    return xpu::Error{std::string("ResourceClaimList: ") + error.what()};
  }
}

}  // namespace shim::dra
