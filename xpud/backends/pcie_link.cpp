#include "xpud/backends/pcie_link.h"

#include <charconv>
#include <string>

#include "xpud/backends/sysfs_attribute.h"

namespace xpud::sysfs {
namespace {

constexpr std::uint64_t kGiga = 1000000000;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// A whole decimal of at most `max_digits` digits as printf's %u writes it: no sign, no leading
// zero, nothing else; nullopt on overflow.
std::optional<std::uint64_t> parse_unsigned(std::string_view text, std::size_t max_digits) {
  if (text.empty() || text.size() > max_digits || !is_digit(text.front())) return std::nullopt;
  if (text.size() > 1 && text.front() == '0') return std::nullopt;
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 10);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<std::uint64_t> parse_link_speed(std::string_view text) {
  text = trim_trailing_space(text);
  // PCI_SPEED_UNKNOWN: "Unknown" from 5.7 on, "Unknown speed" before.
  if (text == "Unknown" || text == "Unknown speed") return 0;
  if (text.ends_with(" PCIe")) text.remove_suffix(5);
  constexpr std::string_view kUnit = " GT/s";
  if (!text.ends_with(kUnit)) return std::nullopt;
  text.remove_suffix(kUnit.size());
  // "2.5", "8.0", "16": whole GT/s and at most one decimal, as pci_speed_string writes them.
  std::string_view whole = text;
  std::string_view tenths;
  if (const auto dot = text.find('.'); dot != std::string_view::npos) {
    whole = text.substr(0, dot);
    tenths = text.substr(dot + 1);
    if (tenths.size() != 1 || !is_digit(tenths.front())) return std::nullopt;
  }
  const auto gigatransfers = parse_unsigned(whole, 4);
  if (!gigatransfers || *gigatransfers > kMaxLinkGigatransfers) return std::nullopt;
  const std::uint64_t transfers =
      *gigatransfers * kGiga +
      (tenths.empty() ? 0 : static_cast<std::uint64_t>(tenths.front() - '0') * (kGiga / 10));
  if (transfers == 0) return std::nullopt;  // "0 GT/s" is no speed the kernel writes
  return transfers;
}

std::optional<unsigned> parse_link_width(std::string_view text) {
  const auto lanes = parse_unsigned(trim_trailing_space(text), 2);
  if (!lanes || *lanes > kMaxLinkWidth) return std::nullopt;
  return static_cast<unsigned>(*lanes);
}

std::optional<std::uint64_t> parse_aer_total(std::string_view text, std::string_view total_name) {
  if (text.empty() || text.back() != '\n') return std::nullopt;
  const std::string total_key = "TOTAL_" + std::string(total_name);
  std::optional<std::uint64_t> total;
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline + 1);
    // "NAME COUNT": the name may hold blanks (the ABI document's "Receiver Error 2"), the count
    // is the last word; 2^64-1 has 20 digits.
    const std::size_t blank = line.rfind(' ');
    if (blank == std::string_view::npos || blank == 0) return std::nullopt;
    const std::string_view name = line.substr(0, blank);
    for (char c : name)
      if (c < 0x20 || c > 0x7e) return std::nullopt;
    const auto count = parse_unsigned(line.substr(blank + 1), 20);
    if (!count) return std::nullopt;
    if (name == total_key) {
      if (total) return std::nullopt;  // twice: not a file the kernel wrote
      total = count;
    }
  }
  return total;
}

PcieLinkState read_pcie_link_state(const std::filesystem::path& function_dir) {
  // 0 is the kernel's "it does not know" for speeds and widths: unknown here too, without a
  // debug line (a VF says so every time).
  auto known = [](auto value) -> decltype(value) {
    if (value && *value == 0) return std::nullopt;
    return value;
  };
  auto aer = [&](const char* file, std::string_view total) {
    return read_attribute(function_dir / file,
                          [total](std::string_view text) { return parse_aer_total(text, total); });
  };
  PcieLinkState state;
  state.speed = known(read_attribute(function_dir / "current_link_speed", parse_link_speed));
  state.max_speed = known(read_attribute(function_dir / "max_link_speed", parse_link_speed));
  state.width = known(read_attribute(function_dir / "current_link_width", parse_link_width));
  state.max_width = known(read_attribute(function_dir / "max_link_width", parse_link_width));
  state.aer_correctable = aer("aer_dev_correctable", "ERR_COR");
  state.aer_nonfatal = aer("aer_dev_nonfatal", "ERR_NONFATAL");
  state.aer_fatal = aer("aer_dev_fatal", "ERR_FATAL");
  return state;
}

}  // namespace xpud::sysfs
