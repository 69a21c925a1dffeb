#include "k8s-shim/dra/slices/device_taints.h"

#include <algorithm>

#include "common/names.h"
#include "k8s-shim/dra/dra_names.h"
#include "k8s-shim/label_value.h"

namespace shim::dra {

const std::vector<std::string_view>& taint_reason_kinds() {
  namespace kind = xpu::names::reason_kind;
  static const std::vector<std::string_view> kinds = {
      kind::kDriverFault,         kind::kReadFailures,   kind::kDriverStalled,
      kind::kMemoryNotReleased,   kind::kPcieFatalError, kind::kPcieNonfatalError,
      kind::kPcieLinkDowntrained, kind::kResetFailed,    kXpudUnreachableReasonKind,
      kUnknownReasonKind};
  return kinds;
}

xpu::Status parse_taint_effect(std::string_view text, TaintPolicy& policy) {
  if (text != taint_effect::kNoSchedule && text != taint_effect::kNone)
    return xpu::Error{"'" + std::string(text) + "' is not NoSchedule or None (NoExecute is set " +
                      "per reason kind with --device-taint-no-execute)"};
  policy.effect = std::string(text);
  return xpu::ok_status();
}

xpu::Status parse_no_execute_kinds(std::string_view text, TaintPolicy& policy) {
  std::set<std::string, std::less<>> kinds;
  const auto& known = taint_reason_kinds();
  for (std::size_t start = 0; !text.empty();) {
    std::size_t comma = text.find(',', start);
    std::string_view kind =
        text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    if (std::find(known.begin(), known.end(), kind) == known.end()) {
      std::string list;
      for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      return xpu::Error{"'" + std::string(kind) + "' is not a reason kind (" + list + ")"};
    }
    kinds.emplace(kind);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  policy.no_execute_kinds = std::move(kinds);
  return xpu::ok_status();
}

std::string taint_key(std::string_view reason_kind) {
  return std::string(kDriverName) + "/" +
         std::string(reason_kind.empty() ? kUnknownReasonKind : reason_kind);
}

std::string taint_value(std::string_view reason) {
  // The API server checks a taint's value as a label value (pkg/apis/resource/validation,
  // validateDeviceTaint).
  return sanitize_label_value(reason).value_or("");
}

std::vector<DeviceTaint> taints_for(const xpu::DeviceInfo& card, const TaintPolicy& policy) {
  if (card.healthy) return {};
  std::string_view kind =
      card.health_reason_kind.empty() ? kUnknownReasonKind : card.health_reason_kind;
  // A kind from xpud that cannot be a key's name part (a newer xpud's word, or garbage): the
  // generic key. That part has a label value's rules, so a usable kind is its own sanitized form.
  if (sanitize_label_value(kind) != kind) kind = kUnknownReasonKind;
  DeviceTaint taint{
      .key = taint_key(kind),
      .value = taint_value(card.health_reason),
      .effect = policy.no_execute_kinds.contains(kind) ? std::string(taint_effect::kNoExecute)
                                                       : policy.effect,
      .time_added = {},
  };
  return {std::move(taint)};
}

}  // namespace shim::dra
