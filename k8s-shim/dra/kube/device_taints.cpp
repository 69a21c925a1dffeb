#include "k8s-shim/dra/kube/device_taints.h"

#include <algorithm>

#include "common/names.h"
#include "k8s-shim/dra/dra_names.h"

namespace shim::dra {

namespace {

// A label value's limit (k8s.io/apimachinery validation.LabelValueMaxLength), which the API
// server checks a taint's value against (pkg/apis/resource/validation validateDeviceTaint).
constexpr std::size_t kMaxLabelValueLength = 63;

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

}  // namespace

const std::vector<std::string_view>& taint_reason_kinds() {
  namespace kind = xpu::names::reason_kind;
  static const std::vector<std::string_view> kinds = {
      kind::kDriverFault, kind::kReadFailures, kind::kDriverStalled, kXpudUnreachableReasonKind,
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
  std::string value;
  for (char c : reason) {
    bool allowed = is_alnum(c) || c == '.' || c == '_' || c == '-';
    char put = allowed ? c : '-';
    if (put == '-' && !value.empty() && value.back() == '-') continue;
    value += put;
  }
  auto trim = [&] {
    while (!value.empty() && !is_alnum(value.back())) value.pop_back();
    std::size_t first = 0;
    while (first < value.size() && !is_alnum(value[first])) ++first;
    value.erase(0, first);
  };
  trim();
  if (value.size() > kMaxLabelValueLength) {
    value.resize(kMaxLabelValueLength);
    trim();
  }
  return value;
}

std::vector<DeviceTaint> taints_for(const xpu::DeviceInfo& card, const TaintPolicy& policy) {
  if (card.healthy) return {};
  std::string_view kind =
      card.health_reason_kind.empty() ? kUnknownReasonKind : card.health_reason_kind;
  // A kind from xpud that is not a label name (a newer xpud's word, or garbage): the generic key.
  bool usable =
      std::all_of(kind.begin(), kind.end(),
                  [](char c) { return is_alnum(c) || c == '_' || c == '-' || c == '.'; }) &&
      kind.size() <= kMaxLabelValueLength && is_alnum(kind.front()) && is_alnum(kind.back());
  if (!usable) kind = kUnknownReasonKind;
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
