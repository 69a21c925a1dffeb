// Stable device ids for cards the daemon can only see through sysfs (no serial, no library
// UUID): RFC 4122 version-5 (SHA-1, name-based) UUIDs, so anyone can recompute one from the
// name, e.g. python3 -c 'import uuid; print(uuid.uuid5(uuid.UUID(NS), NAME))'.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace xpud::sysfs {

using Sha1Digest = std::array<std::uint8_t, 20>;
using UuidBytes = std::array<std::uint8_t, 16>;

// FIPS 180-4 SHA-1. Used only to derive ids, not for security.
Sha1Digest sha1(std::string_view data);

// RFC 4122 section 4.3 with SHA-1, in the canonical lower-case 8-4-4-4-12 form.
std::string uuid_v5(const UuidBytes& name_space, std::string_view name);

// uuid5(NAMESPACE_DNS, "xpud.kunlunxin.com"): the namespace of every sysfs-derived device id.
inline constexpr UuidBytes kSysfsDeviceNamespace = {0xa9, 0x7d, 0x80, 0x1b, 0xb9, 0x70, 0x5a, 0x36,
                                                    0xbe, 0x32, 0x30, 0x5e, 0x94, 0x53, 0x9e, 0x10};

// The id of chip `chip` (0, or 1 for the second chip of a K200) of the card at pci_bus_id:
// uuid_v5(kSysfsDeviceNamespace, "<pci_bus_id>/<model>/<chip>"). Identical across restarts;
// changes when a different model sits in the slot.
std::string sysfs_device_uuid(std::string_view pci_bus_id, std::string_view model, unsigned chip);

}  // namespace xpud::sysfs
