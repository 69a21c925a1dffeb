#pragma once

// Character classes of the ASCII names the tree checks (Kubernetes resource names, label values,
// device ids): <cctype>'s answer depends on the locale, and these names are ASCII whatever it is.

namespace xpu {

constexpr bool is_ascii_lower_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

constexpr bool is_ascii_alnum(char c) {
  return is_ascii_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

}  // namespace xpu
