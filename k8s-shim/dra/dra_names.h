// Names of the DRA driver that every part of it (kubelet plugin, ResourceSlices, exporter) must
// agree on: the driver, the pool, a card's device name, and the CDI names a prepared claim gets.
#pragma once

#include <charconv>
#include <optional>
#include <string>
#include <string_view>

namespace shim::dra {

// The driver name: the DeviceClass, the ResourceSlices' spec.driver, the kubelet plugin's name
// and the domain of the attributes (device.attributes["xpu.kunlunxin.com"].model).
inline constexpr std::string_view kDriverName = "xpu.kunlunxin.com";

// Each node publishes one pool, named after the node (spec.pool.name == spec.nodeName).

// A card's device name in the slice: "xpu-<index>" (a DNS label, as the API requires; the index
// is the card's name on the node, as in /dev/xpuN). The UUID stays an attribute: it may be too
// long or not lower case.
inline std::string device_name(unsigned index) {
  return "xpu-" + std::to_string(index);
}

// The index a device name stands for; nullopt for a name this driver does not publish.
inline std::optional<unsigned> device_index(std::string_view name) {
  constexpr std::string_view prefix = "xpu-";
  if (!name.starts_with(prefix)) return std::nullopt;
  std::string_view digits = name.substr(prefix.size());
  if (digits.empty() || digits.size() > 9 || (digits.size() > 1 && digits.front() == '0'))
    return std::nullopt;
  unsigned index = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return index;
}

}  // namespace shim::dra
