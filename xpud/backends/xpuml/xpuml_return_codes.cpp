#include "xpud/backends/xpuml/xpuml_return_codes.h"

#include <charconv>

namespace xpud::xpuml {

std::optional<ReturnCodeInfo> find_return_code(xpumlReturn_t code) {
  for (const auto& info : kReturnCodes)
    if (info.code == code) return info;
  return std::nullopt;
}

std::optional<xpumlReturn_t> parse_return_code(std::string_view text) {
  constexpr std::string_view kErrorPrefix = "XPUML_ERROR_";
  constexpr std::string_view kPrefix = "XPUML_";
  if (text.starts_with(kErrorPrefix))
    text.remove_prefix(kErrorPrefix.size());
  else if (text.starts_with(kPrefix))
    text.remove_prefix(kPrefix.size());
  for (const auto& info : kReturnCodes)
    if (info.name == text) return info.code;
  int number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return number;
}

std::string return_code_label(xpumlReturn_t code) {
  auto info = find_return_code(code);
  std::string name = info ? std::string(info->name) : std::string("unrecognised code");
  return name + " (" + std::to_string(code) + ")";
}

}  // namespace xpud::xpuml
