#include "k8s-shim/label_value.h"

#include "common/ascii.h"

namespace shim {
namespace {

bool is_value_char(char c) {
  return xpu::is_ascii_alnum(c) || c == '-' || c == '_' || c == '.';
}

std::string_view trim_to_alnum(std::string_view text) {
  while (!text.empty() && !xpu::is_ascii_alnum(text.front())) text.remove_prefix(1);
  while (!text.empty() && !xpu::is_ascii_alnum(text.back())) text.remove_suffix(1);
  return text;
}

}  // namespace

std::optional<std::string> sanitize_label_value(std::string_view text) {
  std::string out;
  bool replaced = false;
  for (char c : text) {
    if (!is_value_char(c)) {
      replaced = true;
      continue;
    }
    if (replaced && !out.empty()) out += '-';
    replaced = false;
    out += c;
  }
  std::string_view value = trim_to_alnum(out);
  value = trim_to_alnum(value.substr(0, kMaxLabelValueLength));
  if (value.empty()) return std::nullopt;
  return std::string(value);
}

}  // namespace shim
