// Device IDs (the `Uuid` property, the device IDs Kubernetes sees). A card keeps its ID whichever
// backend serves it: the xpuml backend takes the library's UUID when it gives a usable one;
// otherwise both it and the sysfs backend derive the same one from what both can see (PCI
// address, the board name the PCI ids give, chip), so switching backends never renames a card.
//
// Derived IDs are RFC 4122 version-5 (SHA-1, name-based) UUIDs, so anyone can recompute one:
// python3 -c 'import uuid; print(uuid.uuid5(uuid.UUID(NS), NAME))'.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace xpud {

using Sha1Digest = std::array<std::uint8_t, 20>;
using UuidBytes = std::array<std::uint8_t, 16>;

// FIPS 180-4 SHA-1. Used only to derive ids, not for security.
Sha1Digest sha1(std::string_view data);

// RFC 4122 section 4.3 with SHA-1, in the canonical lower-case 8-4-4-4-12 form.
std::string uuid_v5(const UuidBytes& name_space, std::string_view name);

// uuid5(NAMESPACE_DNS, "xpud.kunlunxin.com"): the namespace of every derived device id.
inline constexpr UuidBytes kDeviceUuidNamespace = {0xa9, 0x7d, 0x80, 0x1b, 0xb9, 0x70, 0x5a, 0x36,
                                                   0xbe, 0x32, 0x30, 0x5e, 0x94, 0x53, 0x9e, 0x10};

// The id of chip `chip` (0, or 1 for the second chip of a K200) of the card at pci_bus_id
// (normalised, "0000:3b:00.0"): uuid_v5(kDeviceUuidNamespace, "<pci_bus_id>/<pci_model>/<chip>").
// pci_model is the board name pci::model_from_pci_ids gives ("R200", "K200", "KL2-VF",
// "unknown"), not a name from the library, which sysfs cannot see. Identical across restarts;
// changes when a different board sits in the slot. Unique per host, not across hosts.
std::string derived_device_uuid(std::string_view pci_bus_id, std::string_view pci_model,
                                unsigned chip);

// Longest device id accepted from the hardware: ids travel through Kubernetes, D-Bus and
// comma-separated environment variables.
inline constexpr std::size_t kMaxDeviceUuidLength = 63;

// Whether an id the hardware reports can be used as is: 1..kMaxDeviceUuidLength characters of
// letters, digits, '-', '_' or '.' (no separators that would break lists or labels).
bool is_usable_device_uuid(std::string_view uuid);

}  // namespace xpud
