// Kubernetes label values, which node labels and DRA device taints alike must be: at most 63
// characters of [A-Za-z0-9._-], beginning and ending with a letter or digit (k8s.io/apimachinery
// validation.IsValidLabelValue); empty is valid too but says nothing.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace shim {

inline constexpr std::size_t kMaxLabelValueLength = 63;

// `text` made a label value: each run of other characters between allowed ones becomes one '-',
// the ends are trimmed to a letter or digit, and it is cut to 63 characters (and trimmed again).
// nullopt when nothing is left.
std::optional<std::string> sanitize_label_value(std::string_view text);

}  // namespace shim
