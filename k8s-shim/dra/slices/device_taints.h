// The taint an unhealthy card carries in the ResourceSlice (resource.k8s.io/v1 DeviceTaint,
// KEP-5055, GA in Kubernetes 1.37; the type itself is the API's: kube/resource_slice.h), and the
// operator's policy for its effect. Pure: the policy is parsed from flags, the taint computed from
// the card xpud reports.
//
// Why taints as well as the `healthy` attribute: the attribute only keeps a card from claims whose
// class or selector filters on it (the chart's class does, a user's own class need not), and it
// tells a running pod nothing. A taint keeps every claim that does not tolerate it off the card,
// and with NoExecute the API server's eviction controller evicts the pods already using it.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/xpud_types.h"
#include "k8s-shim/cards/card_state.h"
#include "k8s-shim/dra/kube/resource_slice.h"

namespace shim::dra {

struct TaintPolicy {
  // Every unhealthy card's taint: NoSchedule (the default) or None (report only).
  std::string effect{taint_effect::kNoSchedule};
  // Reason kinds whose taint is NoExecute instead (the operator opts in: its pods are evicted).
  std::set<std::string, std::less<>> no_execute_kinds;

  bool operator==(const TaintPolicy&) const = default;
};

// The reason kinds a taint key can name: xpud's Device.HealthReasonKind words, the shim's own
// xpud_unreachable (card_state.h), and "unhealthy" for a card whose kind is not known (an older
// xpud).
inline constexpr std::string_view kUnknownReasonKind = "unhealthy";
const std::vector<std::string_view>& taint_reason_kinds();

// --device-taint-effect: "NoSchedule" or "None" (NoExecute for every reason is refused: a card
// that only read slowly once must not evict its pods unless the operator names that reason).
xpu::Status parse_taint_effect(std::string_view text, TaintPolicy& policy);
// --device-taint-no-execute: comma-separated reason kinds from taint_reason_kinds(); "" for none.
xpu::Status parse_no_execute_kinds(std::string_view text, TaintPolicy& policy);

// The taint key for a reason kind: "xpu.kunlunxin.com/<kind>" ("unhealthy" when empty).
std::string taint_key(std::string_view reason_kind);
// A health reason as a label value (which a taint's value must be: sanitize_label_value), empty
// when nothing is left.
std::string taint_value(std::string_view reason);

// The taint of a card under `policy`: none while it is healthy.
std::vector<DeviceTaint> taints_for(const xpu::DeviceInfo& card, const TaintPolicy& policy);

}  // namespace shim::dra
