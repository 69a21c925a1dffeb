// The resource.k8s.io/v1 request targets (the name checks and the encoding they rely on:
// k8s-shim/kube/api_names.h).
#pragma once

#include <string>
#include <string_view>

namespace shim::dra {

inline constexpr std::string_view kResourceApiPrefix = "/apis/resource.k8s.io/v1";

// Callers validate the names first; these only assemble.
std::string resource_claim_path(std::string_view namespace_name, std::string_view name);
// Server-side apply to the claim's status subresource as our field manager, forced: the fields
// are ours (our driver's status.devices entries), whoever wrote them last.
std::string resource_claim_status_apply_target(std::string_view namespace_name,
                                               std::string_view name,
                                               std::string_view field_manager);
std::string resource_slices_path();
std::string resource_slice_path(std::string_view name);
// The list of one node's slices of one driver (both field selectors exist in v1 since 1.34's
// API; spec.pool.name does not, the server answers 400 to it).
std::string resource_slices_of_node_target(std::string_view driver, std::string_view node);

// GET targets of the objects the driver reads when it stops (workload_objects.h).
std::string node_path(std::string_view name);
std::string daemon_set_path(std::string_view namespace_name, std::string_view name);

}  // namespace shim::dra
