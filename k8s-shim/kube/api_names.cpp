#include "k8s-shim/kube/api_names.h"

#include "common/ascii.h"

namespace shim::kube {

bool is_dns_label(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  if (!xpu::is_ascii_lower_alnum(name.front()) || !xpu::is_ascii_lower_alnum(name.back()))
    return false;
  for (char c : name)
    if (!xpu::is_ascii_lower_alnum(c) && c != '-') return false;
  return true;
}

bool is_dns_subdomain(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  while (true) {
    std::size_t dot = name.find('.');
    if (!is_dns_label(name.substr(0, dot))) return false;
    if (dot == std::string_view::npos) return true;
    name.remove_prefix(dot + 1);
  }
}

std::string percent_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out += c;
    } else {
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 0x0f];
    }
  }
  return out;
}

}  // namespace shim::kube
