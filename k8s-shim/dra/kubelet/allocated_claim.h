// A ResourceClaim as the kubelet plugin needs it from the API server: who it is and what the
// scheduler allocated. The role adapts the API half's typed claim to this, so the decisions here
// stay free of JSON and HTTP.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shim::dra {

// One entry of status.allocation.devices.results.
struct AllocatedDevice {
  std::string request;  // "<request>" or "<request>/<subrequest>" (prioritized list)
  std::string driver, pool, device;
  // adminAccess (KEP-5018): a monitoring or diagnostics claim on a card others may hold. It is
  // prepared like any other and frees nothing; an unhealthy card is not refused to it.
  bool admin_access = false;
  // A share of a card (memory shares: share_policy.h): the allocation's shareID and the bytes
  // it consumed of the card's memory.
  std::string share_id{};
  std::optional<std::int64_t> consumed_memory{};

  bool operator==(const AllocatedDevice&) const = default;
};

struct AllocatedClaim {
  std::string name, namespace_name, uid;
  bool allocated = false;  // status.allocation present
  std::vector<AllocatedDevice> results;
  // A claim made from a template: the pod's name for it (the ResourceClaim controller's
  // annotation resource.kubernetes.io/pod-claim-name), unchecked; empty otherwise.
  std::string pod_claim_name{};

  bool operator==(const AllocatedClaim&) const = default;
};

}  // namespace shim::dra
