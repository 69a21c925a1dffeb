// The two PCI names Kubernetes' standard device attributes carry, checked as Kubernetes checks
// them: xpud before it resolves a card's root complex, the DRA driver before it publishes either.
// Source: k8s.io/dynamic-resource-allocation v0.37.2, deviceattribute/pci_linux.go.
#pragma once

#include <cstddef>
#include <string_view>

namespace xpu::pci_address {

namespace detail {
constexpr bool is_lower_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}
// `text` has the shape of `pattern`, where 'x' stands for a lower-case hex digit and every other
// character for itself.
constexpr bool has_shape(std::string_view text, std::string_view pattern) {
  if (text.size() != pattern.size()) return false;
  for (std::size_t i = 0; i < text.size(); ++i)
    if (pattern[i] == 'x' ? !is_lower_hex(text[i]) : text[i] != pattern[i]) return false;
  return true;
}
}  // namespace detail

// Extended BDF, "0000:3b:00.0", as verifyPCIBDFFormat takes it:
// ^([0-9a-f]{4}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-9a-f]{1})$ (lower case only; xpud's PciBusId
// always has this form, its normaliser writes "%04x:%02x:%02x.%x" of a domain up to 0xffff).
constexpr bool is_extended_bdf(std::string_view text) {
  return detail::has_shape(text, "xxxx:xx:xx.x");
}

// A root complex as the kernel names its root bus's directory under /sys/devices
// (drivers/pci/probe.c: "pci%04x:%02x"), "pci0000:00", for a domain of 4 hex digits: the only
// domains an extended BDF can name. resolvePCIeRoot takes any first component after
// devices/pci; this is stricter, so that a planted link cannot publish a name of its choosing.
constexpr bool is_pcie_root(std::string_view text) {
  return detail::has_shape(text, "pcixxxx:xx");
}

}  // namespace xpu::pci_address
