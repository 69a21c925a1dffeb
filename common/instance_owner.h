// Who a cXPU instance is for (Manager.CreateInstance's owner), shared by xpud, which checks it,
// and xpuctl's hook, which makes it from the container runtime's annotations.
#pragma once

#include <cstddef>
#include <string_view>

namespace xpu::names {

// Who a cXPU instance is for (Manager.CreateInstance's owner): "<namespace>/<pod>/<container>"
// as Kubernetes names them (namespace and container: DNS labels, 1 to 63 of a-z, 0-9, '-'; pod:
// a DNS subdomain, 1 to 253 of a-z, 0-9, '-', '.'). It becomes exporter labels: nothing else.
constexpr bool is_instance_owner(std::string_view owner) {
  auto valid = [](std::string_view part, std::size_t max, bool dots) {
    if (part.empty() || part.size() > max) return false;
    for (char c : part)
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || (dots && c == '.')))
        return false;
    return true;
  };
  const std::size_t first = owner.find('/');
  if (first == std::string_view::npos) return false;
  const std::size_t second = owner.find('/', first + 1);
  if (second == std::string_view::npos || owner.find('/', second + 1) != std::string_view::npos)
    return false;
  return valid(owner.substr(0, first), 63, false) &&
         valid(owner.substr(first + 1, second - first - 1), 253, true) &&
         valid(owner.substr(second + 1), 63, false);
}

}  // namespace xpu::names
