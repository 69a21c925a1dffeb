#include "xpud/backends/pci_ids.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <string_view>
#include <system_error>

namespace xpud::pci {

std::optional<PciModel> model_from_pci_ids(std::uint16_t vendor, std::uint16_t device,
                                           std::uint16_t subsystem_vendor,
                                           std::uint16_t subsystem_device) {
  if (vendor != kVendorKunlunxin) return std::nullopt;
  if (device == kDeviceKl2Vf) return PciModel{"KL2-VF", true};
  if (device == kDeviceKl3) return PciModel{"P800", false};
  if (device != kDeviceKl1Kl2) return std::nullopt;
  if (subsystem_vendor == 0 && subsystem_device == 0) return PciModel{"K200", false};
  if (subsystem_vendor != 2) return PciModel{kUnknownModel, false};
  switch (subsystem_device) {
    case 1:
      return PciModel{"R200", false};
    case 2:
      return PciModel{"R100", false};
    case 3:
      return PciModel{"R300", false};
    case 4:
      return PciModel{"R200-8F", false};
    case 5:
      return PciModel{"R200-8FS", false};
    case 6:
      return PciModel{"R420", false};
    case 7:
      return PciModel{"RG800", false};
    case 8:
      return PciModel{"RG800-PRO", false};
    default:
      return PciModel{kUnknownModel, false};
  }
}

std::optional<std::string> model_from_board_id(unsigned board_id) {
  switch (board_id) {
    case 1:
      return "K100";
    case 2:
      return "K200";
    case 99:
      return "R100";
    case 100:
      return "R200";
    case 101:
      return "R300";
    case 102:
      return "R200-8F";
    case 103:
      return "R200-8FS";
    case 105:
      return "R420";
    case 106:
      return "RG800";
    default:
      return std::nullopt;
  }
}

namespace {

// One field of a PCI address: hex digits only (any number of leading zeros, as the library's
// 8-digit domain has), at most `max`. Read with from_chars, which reports a value too large for
// the type instead of wrapping it (sscanf's %x took "00200000000" for 0).
std::optional<unsigned> parse_bus_id_field(std::string_view digits, unsigned max) {
  if (digits.empty()) return std::nullopt;
  for (char c : digits)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
  unsigned value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, 16);
  if (ec != std::errc{} || end != digits.data() + digits.size() || value > max) return std::nullopt;
  return value;
}

}  // namespace

std::optional<std::string> normalize_bus_id(const std::string& text) {
  const std::string_view address(text);
  const auto first = address.find(':');
  if (first == std::string_view::npos) return std::nullopt;
  const auto second = address.find(':', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  const auto dot = address.find('.', second + 1);
  if (dot == std::string_view::npos) return std::nullopt;
  const auto domain = parse_bus_id_field(address.substr(0, first), 0xffff);
  const auto bus = parse_bus_id_field(address.substr(first + 1, second - first - 1), 0xff);
  const auto dev = parse_bus_id_field(address.substr(second + 1, dot - second - 1), 0x1f);
  const auto fn = parse_bus_id_field(address.substr(dot + 1), 0x7);
  if (!domain || !bus || !dev || !fn) return std::nullopt;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", *domain, *bus, *dev, *fn);
  return std::string(buf);
}

}  // namespace xpud::pci
