// Kunlunxin PCI identities and board names (facts from xpu-facts.md), shared by the backends
// that identify cards: xpuml (pciDeviceId/pciSubSystemId, board enum) and sysfs (config ids).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace xpud::pci {

inline constexpr std::uint16_t kVendorKunlunxin = 0x1d22;
inline constexpr std::uint16_t kDeviceKl1Kl2 = 0x3684;  // K100/K200 and the R-series
inline constexpr std::uint16_t kDeviceKl2Vf = 0x3685;   // KL2 SR-IOV virtual function
inline constexpr std::uint16_t kDeviceKl3 = 0x3688;     // P800 (unconfirmed)

inline constexpr const char* kUnknownModel = "unknown";

struct PciModel {
  std::string model;
  bool is_virtual_function = false;
};

// Board name from PCI device and subsystem ids; nullopt when the device is not a Kunlunxin XPU.
std::optional<PciModel> model_from_pci_ids(std::uint16_t vendor, std::uint16_t device,
                                           std::uint16_t subsystem_vendor,
                                           std::uint16_t subsystem_device);

// Board name from the management library's board enum; nullopt for values we do not know.
std::optional<std::string> model_from_board_id(unsigned board_id);

// Normalises a PCI address to the contract form "dddd:bb:dd.f" (lower case, 4-digit domain).
// Accepts the library's "%08X:%02X:%02X.%01X" and sysfs names. nullopt when malformed.
std::optional<std::string> normalize_bus_id(const std::string& text);

}  // namespace xpud::pci
