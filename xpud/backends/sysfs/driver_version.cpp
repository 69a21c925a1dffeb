#include "xpud/backends/sysfs/driver_version.h"

#include <array>

#include "xpud/backends/sysfs_attribute.h"

namespace xpud::sysfs {

std::optional<std::string> parse_driver_version(std::string_view text) {
  text = trim_trailing_space(text);
  constexpr std::size_t kMaxComponentDigits = 9;
  std::size_t components = 0;
  std::size_t digits = 0;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      if (++digits > kMaxComponentDigits) return std::nullopt;
    } else if (c == '.') {
      if (digits == 0) return std::nullopt;
      ++components;
      digits = 0;
    } else {
      return std::nullopt;
    }
  }
  if (digits == 0) return std::nullopt;
  ++components;
  if (components < 3 || components > 4) return std::nullopt;
  return std::string(text);
}

std::string read_driver_version(const std::filesystem::path& root) {
  const std::array<std::filesystem::path, 2> sources = {root / "proc/xpu/version",
                                                        root / "sys/module/kunlun/version"};
  for (const auto& path : sources)
    if (auto version = read_attribute(path, parse_driver_version)) return *version;
  return {};
}

}  // namespace xpud::sysfs
