#include "xpud/backends/pci_ids.h"

#include <cctype>
#include <cstdio>

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
    case 1: return PciModel{"R200", false};
    case 2: return PciModel{"R100", false};
    case 3: return PciModel{"R300", false};
    case 4: return PciModel{"R200-8F", false};
    case 5: return PciModel{"R200-8FS", false};
    case 6: return PciModel{"R420", false};
    case 7: return PciModel{"RG800", false};
    case 8: return PciModel{"RG800-PRO", false};
    default: return PciModel{kUnknownModel, false};
  }
}

std::optional<std::string> model_from_board_id(unsigned board_id) {
  switch (board_id) {
    case 1: return "K100";
    case 2: return "K200";
    case 99: return "R100";
    case 100: return "R200";
    case 101: return "R300";
    case 102: return "R200-8F";
    case 103: return "R200-8FS";
    case 105: return "R420";
    case 106: return "RG800";
    default: return std::nullopt;
  }
}

std::optional<std::string> normalize_bus_id(const std::string& text) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%x:%x:%x.%x%n", &domain, &bus, &dev, &fn, &consumed) != 4 ||
      static_cast<size_t>(consumed) != text.size())
    return std::nullopt;
  for (char c : text)
    if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') return std::nullopt;
  if (domain > 0xffff || bus > 0xff || dev > 0x1f || fn > 0x7) return std::nullopt;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", domain, bus, dev, fn);
  return std::string(buf);
}

}  // namespace xpud::pci
