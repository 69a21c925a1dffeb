// Device IDs for libraries without xpumlDeviceGetUUID: a UUID-formatted string derived from
// something that stays the same across reboots (the card's serial, else its PCI address).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace xpud::xpuml {

// Longest UUID we accept from the library: device IDs travel through Kubernetes, D-Bus and
// comma-separated environment variables.
inline constexpr std::size_t kMaxUuidLength = 63;

// "xxxxxxxx-xxxx-8xxx-yxxx-xxxxxxxxxxxx" (RFC 9562 version 8, i.e. custom), a pure function of
// `source`: the same source gives the same ID on every host and every run.
std::string derive_uuid(std::string_view source);

// Whether a library-reported UUID can be used as a device ID as is: 1..63 characters of
// letters, digits, '-', '_' or '.' (no separators that would break lists or labels).
bool is_usable_uuid(std::string_view uuid);

}  // namespace xpud::xpuml
