// The kunlun driver's version without the vendor library: /proc/xpu/version, else the module's
// MODULE_VERSION in /sys/module/kunlun/version.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace xpud::sysfs {

// "major.minor.patch" (a fourth build component, as in "5.0.21.16", is accepted too): numeric
// components of at most 9 digits. Trailing whitespace is dropped; anything else is rejected.
std::optional<std::string> parse_driver_version(std::string_view text);

// The first valid version of <root>/proc/xpu/version and <root>/sys/module/kunlun/version;
// empty when neither holds one (each invalid file gets a debug line naming it).
std::string read_driver_version(const std::filesystem::path& root);

}  // namespace xpud::sysfs
