// The parts of a resource.k8s.io/v1 ResourceClaim this driver reads: who it is and which devices
// the scheduler allocated to it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace shim::dra {

// One entry of status.allocation.devices.results.
struct DeviceAllocation {
  std::string request;
  std::string driver;
  std::string pool;
  std::string device;
  bool admin_access = false;  // adminAccess: true
  // A device allocated several times (allowMultipleAllocations) names each allocation: shareID
  // (a UID), and what it took of the device's capacity: consumedCapacity.memory, in bytes.
  std::string share_id{};
  std::optional<std::int64_t> consumed_memory{};

  bool operator==(const DeviceAllocation&) const = default;
};

// The annotation the ResourceClaim controller puts on a claim it made from a template: the
// pod's name for it (pod.spec.resourceClaims[].name), k8s.io/api resource/v1
// PodResourceClaimAnnotation.
inline constexpr std::string_view kPodClaimNameAnnotation = "resource.kubernetes.io/pod-claim-name";

struct ResourceClaim {
  std::string name;
  std::string namespace_name;
  std::string uid;
  // kPodClaimNameAnnotation's value as the API server holds it (any string: annotations are not
  // validated); empty when absent.
  std::string pod_claim_name{};
  bool allocated = false;                 // status.allocation present
  std::vector<DeviceAllocation> results;  // of every driver; filter by driver before use
};

// Unknown fields are ignored; a known field of the wrong JSON type is an error naming its path.
// Never throws.
xpu::Result<ResourceClaim> parse_resource_claim(std::string_view json);
// A ResourceClaimList's items, each read as parse_resource_claim reads one; an error names the
// item.
xpu::Result<std::vector<ResourceClaim>> parse_resource_claim_list(std::string_view json);

}  // namespace shim::dra
