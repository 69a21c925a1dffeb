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

// With memory shares on (share_policy.h), a card is published a second time as
// "xpu-<index>-shared": the device whose capacity claims consume by amount.
inline constexpr std::string_view kSharedSuffix = "-shared";

inline std::string shared_device_name(unsigned index) {
  return device_name(index) + std::string(kSharedSuffix);
}

// A device name of this driver read as the card it stands for and whether it is the card's
// shareable device; nullopt for any other name.
struct NamedDevice {
  unsigned index = 0;
  bool shared = false;
};

inline std::optional<NamedDevice> named_device(std::string_view name) {
  const bool shared = name.ends_with(kSharedSuffix);
  if (shared) name.remove_suffix(kSharedSuffix.size());
  std::optional<unsigned> index = device_index(name);
  if (!index) return std::nullopt;
  return NamedDevice{*index, shared};
}

// A Kunlunxin function on vfio-pci (a card or VF given to virtual machines, in no compute pool):
// "vfio-<its PCI address, ':' and '.' made '-'>", "vfio-0000-3b-00-0" for 0000:3b:00.0, a DNS
// label like every device name. The address stays an attribute (pciBusId).
inline constexpr std::string_view kVfioDevicePrefix = "vfio-";

inline std::string vfio_device_name(std::string_view pci_bus_id) {
  std::string name(kVfioDevicePrefix);
  for (char c : pci_bus_id) name += (c == ':' || c == '.') ? '-' : c;
  return name;
}

// The counter set of a card's memory, which its whole device and its shareable device both
// consume in full: "xpu-<index>".
inline std::string counter_set_name(unsigned index) {
  return device_name(index);
}

}  // namespace shim::dra
