// The CDI names of a prepared claim's own spec: one CDI device per request of the claim, carrying
// the environment of all the request's cards. Shared by the preparation (which hands the names
// to the kubelet) and the spec writer (which defines them), so both spell them alike.
#pragma once

#include <string>
#include <string_view>

#include "common/names.h"

namespace shim::dra {

inline constexpr std::string_view kClaimCdiKind = "kunlunxin.com/claim";

// Kubernetes UIDs are UUIDs; anything else from the kubelet is refused before it becomes part of
// a file name or a CDI name (no '/', no leading dot, bounded).
inline bool is_claim_uid(std::string_view uid) {
  return uid.size() <= 64 && xpu::names::cdi::is_device_name(uid);
}

// "<uid>-<request>". A subrequest's result names "<request>/<subrequest>", and '/' may not appear
// in a CDI name: it becomes '.', which a request name (a DNS label) never holds, so two requests
// never share a name.
inline std::string claim_cdi_device_name(std::string_view uid, std::string_view request) {
  std::string name(uid);
  name += '-';
  for (char c : request) name += c == '/' ? '.' : c;
  return name;
}

inline std::string claim_cdi_qualified_name(std::string_view uid, std::string_view request) {
  return std::string(kClaimCdiKind) + "=" + claim_cdi_device_name(uid, request);
}

}  // namespace shim::dra
