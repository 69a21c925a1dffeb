#include "k8s-shim/dra/kube/api_paths.h"

#include "common/ascii.h"

namespace shim::dra {

namespace {}  // namespace

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

std::string resource_claim_path(std::string_view namespace_name, std::string_view name) {
  return std::string(kResourceApiPrefix) + "/namespaces/" + percent_encode(namespace_name) +
         "/resourceclaims/" + percent_encode(name);
}

std::string resource_claim_status_apply_target(std::string_view namespace_name,
                                               std::string_view name,
                                               std::string_view field_manager) {
  return resource_claim_path(namespace_name, name) +
         "/status?fieldManager=" + percent_encode(field_manager) + "&force=true";
}

std::string resource_slices_path() {
  return std::string(kResourceApiPrefix) + "/resourceslices";
}

std::string resource_slice_path(std::string_view name) {
  return resource_slices_path() + "/" + percent_encode(name);
}

std::string resource_slices_of_node_target(std::string_view driver, std::string_view node) {
  std::string selector =
      "spec.driver=" + std::string(driver) + ",spec.nodeName=" + std::string(node);
  return resource_slices_path() + "?fieldSelector=" + percent_encode(selector);
}

std::string node_path(std::string_view name) {
  return "/api/v1/nodes/" + percent_encode(name);
}

std::string daemon_set_path(std::string_view namespace_name, std::string_view name) {
  return "/apis/apps/v1/namespaces/" + percent_encode(namespace_name) + "/daemonsets/" +
         percent_encode(name);
}

}  // namespace shim::dra
