#include "xpud/backends/sysfs/probe_errors.h"

#include <charconv>
#include <optional>

#include <spdlog/spdlog.h>

#include "xpud/backends/pci_ids.h"
#include "xpud/backends/sysfs_attribute.h"

namespace xpud::sysfs {
namespace {

bool is_printable_ascii(std::string_view text) {
  for (char c : text)
    if (c != '\t' && (c < 0x20 || c > 0x7e)) return false;
  return true;
}

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

// Splits off the first blank-separated word; the rest keeps its inner spacing.
std::string_view next_word(std::string_view& text) {
  while (!text.empty() && is_blank(text.front())) text.remove_prefix(1);
  std::size_t end = 0;
  while (end < text.size() && !is_blank(text[end])) ++end;
  std::string_view word = text.substr(0, end);
  text.remove_prefix(end);
  return word;
}

template <typename Int>
std::optional<Int> parse_int(std::string_view text) {
  Int value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 10);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<ProbeFailure> parse_line(std::string_view line) {
  if (!is_printable_ascii(line)) return std::nullopt;
  ProbeFailure failure;
  auto bus_id = pci::normalize_bus_id(std::string(next_word(line)));
  std::string_view serial = next_word(line);
  auto index = parse_int<unsigned>(next_word(line));
  std::string_view name = next_word(line);
  auto error_number = parse_int<int>(next_word(line));
  if (!bus_id || serial.empty() || !index || name.empty() || !error_number) return std::nullopt;
  while (!line.empty() && is_blank(line.front())) line.remove_prefix(1);
  failure.pci_bus_id = *bus_id;
  failure.serial = serial;
  failure.driver_index = *index;
  failure.name = name;
  failure.error_number = *error_number;
  failure.error_text = trim_trailing_space(line);
  return failure;
}

}  // namespace

std::string ProbeFailure::reason() const {
  std::string text = "driver failed to probe " + pci_bus_id + ": ";
  if (!error_text.empty()) text += error_text + " ";
  return text + "(errno " + std::to_string(error_number) + ")";
}

std::map<std::string, ProbeFailure> parse_probe_errors(std::string_view text,
                                                       std::string_view source) {
  std::map<std::string, ProbeFailure> failures;
  unsigned line_number = 0;
  while (!text.empty()) {
    ++line_number;
    std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (trim_trailing_space(line).empty()) continue;
    auto failure = parse_line(line);
    if (!failure) {
      spdlog::debug("sysfs: ignoring {} line {}: not \"BDF sn idx name errno strerror\"", source,
                    line_number);
      continue;
    }
    failures.insert_or_assign(failure->pci_bus_id, std::move(*failure));
  }
  return failures;
}

std::map<std::string, ProbeFailure> read_probe_errors(const std::filesystem::path& path) {
  auto text = read_text_file(path, kMaxProbeErrorBytes);
  if (!text.ok()) {
    log_ignored_file(path, text.error());
    return {};
  }
  if (!text->has_value()) return {};
  return parse_probe_errors(**text, path.string());
}

}  // namespace xpud::sysfs
