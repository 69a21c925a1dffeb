#include "k8s-shim/resource_name.h"

#include "common/ascii.h"

namespace shim {
namespace {

constexpr std::size_t kMaxNameLength = 63;
constexpr std::size_t kMaxSubdomainLength = 253;
constexpr std::string_view kQuotaPrefix = "requests.";

// RFC 1123 subdomain: dot-separated labels of [a-z0-9-], each starting and ending alphanumeric.
xpu::Status check_subdomain(std::string_view domain) {
  if (domain.empty()) return xpu::Error{"the domain before '/' is empty"};
  if (domain.size() > kMaxSubdomainLength)
    return xpu::Error{"the domain is longer than " + std::to_string(kMaxSubdomainLength) +
                      " characters"};
  std::size_t start = 0;
  while (true) {
    std::size_t dot = domain.find('.', start);
    std::string_view label =
        domain.substr(start, dot == std::string_view::npos ? domain.npos : dot - start);
    if (label.empty() || !xpu::is_ascii_lower_alnum(label.front()) ||
        !xpu::is_ascii_lower_alnum(label.back()))
      return xpu::Error{"domain '" + std::string(domain) +
                        "' is not a DNS subdomain (lower-case labels of a-z, 0-9 and '-', "
                        "starting and ending with a letter or digit)"};
    for (char c : label)
      if (!xpu::is_ascii_lower_alnum(c) && c != '-')
        return xpu::Error{"domain '" + std::string(domain) + "' contains '" + std::string(1, c) +
                          "' (only a-z, 0-9, '-' and '.' are allowed)"};
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return xpu::ok_status();
}

xpu::Status check_name_part(std::string_view name) {
  if (name.empty()) return xpu::Error{"the name after '/' is empty"};
  if (name.size() > kMaxNameLength)
    return xpu::Error{"the name after '/' is longer than " + std::to_string(kMaxNameLength) +
                      " characters"};
  if (!xpu::is_ascii_alnum(name.front()) || !xpu::is_ascii_alnum(name.back()))
    return xpu::Error{"the name after '/' must start and end with a letter or digit"};
  for (char c : name)
    if (!xpu::is_ascii_alnum(c) && c != '-' && c != '_' && c != '.')
      return xpu::Error{"the name after '/' contains '" + std::string(1, c) +
                        "' (only letters, digits, '-', '_' and '.' are allowed)"};
  return xpu::ok_status();
}

}  // namespace

xpu::Status validate_extended_resource_name(std::string_view name) {
  auto fail = [name](const std::string& why) {
    return xpu::Error{"'" + std::string(name) + "' is not a valid extended resource name: " + why};
  };
  std::size_t slash = name.find('/');
  if (slash == std::string_view::npos) return fail("it needs a domain, like kunlunxin.com/xpu");
  if (name.find("kubernetes.io/") != std::string_view::npos)
    return fail("the kubernetes.io domain is reserved for native resources");
  if (name.starts_with(kQuotaPrefix)) return fail("it must not start with 'requests.'");
  std::string_view domain = name.substr(0, slash);
  std::string_view rest = name.substr(slash + 1);
  if (rest.find('/') != std::string_view::npos) return fail("it has more than one '/'");
  // Resource quotas spell it "requests.<name>": that form must be valid too.
  std::string quota_domain = std::string(kQuotaPrefix) + std::string(domain);
  if (auto status = check_subdomain(quota_domain); !status) {
    if (auto plain = check_subdomain(domain); !plain) return fail(plain.error());
    return fail("the domain is too long once prefixed with 'requests.'");
  }
  if (auto status = check_name_part(rest); !status) return fail(status.error());
  return xpu::ok_status();
}

std::string_view resource_domain(std::string_view name) {
  return name.substr(0, name.find('/'));
}

std::string_view card_uuid_of_device_id(std::string_view device_id) {
  const std::size_t separator = device_id.rfind(kReplicaSeparator);
  if (separator == std::string_view::npos || separator == 0) return device_id;
  std::string_view replica = device_id.substr(separator + kReplicaSeparator.size());
  if (replica.starts_with(kMemoryUnitMark)) replica.remove_prefix(kMemoryUnitMark.size());
  if (replica.empty()) return device_id;
  for (char c : replica)
    if (c < '0' || c > '9') return device_id;
  return device_id.substr(0, separator);
}

xpu::Status validate_device_id(std::string_view id) {
  if (id.empty()) return xpu::Error{"the UUID is empty"};
  if (id.size() > kMaxDeviceIdLength)
    return xpu::Error{"the UUID '" + std::string(id) + "' is longer than " +
                      std::to_string(kMaxDeviceIdLength) + " characters"};
  for (char c : id)
    if (!xpu::is_ascii_alnum(c) && c != '-' && c != '_' && c != '.' && c != ':')
      return xpu::Error{"the UUID '" + std::string(id) +
                        "' contains a character other than "
                        "letters, digits, '-', '_', '.' and ':'"};
  return xpu::ok_status();
}

}  // namespace shim
