// Every parser of a kernel-provided text file the hardware backends read: the attribute parsers
// of sysfs_attribute.h (PCI ids, NUMA node, VF counts), the driver version, /proc/xpu/probe_error,
// class-device names (xpuN), PCI addresses as sysfs and the library spell them, the text the
// library writes into our buffers, a bus entry's link target (the PCIe root), and the PCIe link
// and AER files (pcie_link.h). Each gets the
// same bytes; what it accepts must mean what its header says.
#include <cctype>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/pci_address.h"
#include "fuzz/fuzz_support.h"
#include "xpud/backends/pci_ids.h"
#include "xpud/backends/pcie_link.h"
#include "xpud/backends/pcie_root.h"
#include "xpud/backends/sysfs/driver_version.h"
#include "xpud/backends/sysfs/pci_function_scan.h"
#include "xpud/backends/sysfs/probe_errors.h"
#include "xpud/backends/sysfs_attribute.h"
#include "xpud/backends/xpuml/xpuml_library.h"

namespace {

using xpu::fuzz::check;
namespace sysfs = xpud::sysfs;

bool is_hex_digits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// Decimal digits as std::to_string writes their value.
std::string_view without_leading_zeros(std::string_view digits) {
  while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
  return digits;
}

// The value of a field of hex digits, or -1 when it does not fit 32 bits: independent of the
// parser under test, which reads the fields with sscanf.
long long hex_value(std::string_view digits) {
  while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
  if (digits.size() > 8) return -1;
  unsigned long long value = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), value, 16);
  return static_cast<long long>(value);
}

// An accepted address must be "domain:bus:device.function" in hex, each field the number the
// normalised form holds.
void check_bus_id(const std::string& text) {
  auto normalised = xpud::pci::normalize_bus_id(text);
  if (!normalised) return;
  const std::string& out = *normalised;
  check(out.size() == 12 && out[4] == ':' && out[7] == ':' && out[10] == '.',
        "normalize_bus_id form", text + " -> " + out);
  const auto first = text.find(':');
  const auto second = text.find(':', first == std::string::npos ? first : first + 1);
  const auto dot = text.find('.', second == std::string::npos ? second : second + 1);
  check(first != std::string::npos && second != std::string::npos && dot != std::string::npos,
        "normalize_bus_id accepted a malformed address", text);
  const std::string_view in(text);
  const std::string_view fields[] = {in.substr(0, first), in.substr(first + 1, second - first - 1),
                                     in.substr(second + 1, dot - second - 1), in.substr(dot + 1)};
  const std::string_view normal_fields[] = {
      std::string_view(out).substr(0, 4), std::string_view(out).substr(5, 2),
      std::string_view(out).substr(8, 2), std::string_view(out).substr(11, 1)};
  for (int i = 0; i < 4; ++i) {
    check(is_hex_digits(fields[i]), "normalize_bus_id accepted a non-hex field", text);
    check(hex_value(fields[i]) == hex_value(normal_fields[i]),
          "normalize_bus_id changed a field's value", text + " -> " + out);
  }
  check(xpud::pci::normalize_bus_id(out) == out, "normalize_bus_id is not idempotent", out);
}

void check_attribute_parsers(std::string_view text) {
  if (auto id = sysfs::parse_pci_id(text)) {
    auto digits = sysfs::trim_trailing_space(text);
    if (digits.starts_with("0x") || digits.starts_with("0X")) digits.remove_prefix(2);
    check(digits.size() <= 4 && is_hex_digits(digits) && hex_value(digits) == *id,
          "parse_pci_id accepted something else than 1-4 hex digits", std::string(text));
  }
  if (auto node = sysfs::parse_numa_node(text))
    check(*node >= -1 && *node <= sysfs::kMaxNumaNode, "parse_numa_node range",
          std::to_string(*node));
  if (auto count = sysfs::parse_vf_count(text))
    check(*count <= 0xffff &&
              std::to_string(*count) == without_leading_zeros(sysfs::trim_trailing_space(text)),
          "parse_vf_count value", std::string(text));
  if (auto version = sysfs::parse_driver_version(text)) {
    check(!version->empty() && version->find_first_not_of("0123456789.") == std::string::npos &&
              version->front() != '.' && version->back() != '.',
          "parse_driver_version accepted a non-version", *version);
  }
  if (auto node = sysfs::parse_device_node_name(text))
    check(*node <= sysfs::kMaxDeviceNodeNumber && "xpu" + std::to_string(*node) == text,
          "parse_device_node_name", std::string(text));
}

// What the PCIe parsers accept is what the kernel can write: a speed within bounds in whole
// tenths of GT/s, a width of at most x32, an AER total that is the TOTAL_ line's number.
void check_pcie_link_parsers(std::string_view text) {
  if (auto speed = sysfs::parse_link_speed(text))
    check(*speed <= sysfs::kMaxLinkGigatransfers * 1000000000 && *speed % 100000000 == 0,
          "parse_link_speed value", std::string(text));
  if (auto width = sysfs::parse_link_width(text))
    check(*width <= sysfs::kMaxLinkWidth, "parse_link_width range", std::string(text));
  if (auto total = sysfs::parse_aer_total(text, "ERR_FATAL"))
    check(text.find("TOTAL_ERR_FATAL " + std::to_string(*total) + "\n") != std::string_view::npos,
          "parse_aer_total gave a count the file does not hold", std::string(text));
}

void check_probe_errors(std::string_view text) {
  for (const auto& [bus_id, failure] : sysfs::parse_probe_errors(text, "fuzz")) {
    check(xpud::pci::normalize_bus_id(bus_id) == bus_id && failure.pci_bus_id == bus_id,
          "parse_probe_errors key is not a normalised bus id", bus_id);
    const std::string reason = failure.reason();
    for (char c : reason)
      check(c == '\t' || (c >= 0x20 && c <= 0x7e), "probe failure reason is not printable", reason);
    check(!failure.serial.empty() && !failure.name.empty(), "probe failure without serial or name");
  }
}

void check_library_text(std::string_view text) {
  auto kept = xpud::xpuml::text_from_library(text.data(), text.size());
  if (!kept) return;
  check(!kept->empty() && kept->front() != ' ' && kept->back() != ' ',
        "text_from_library kept surrounding blanks", *kept);
  for (char c : *kept)
    check(c >= 0x20 && c <= 0x7e, "text_from_library kept a non-printable byte", *kept);
}

// The text as the target of sys/bus/pci/devices/0000:3b:00.0: a root it gives has the kernel's
// form and is named in a relative target that also names the function.
void check_pcie_root(std::string_view text) {
  constexpr std::string_view bus_id = "0000:3b:00.0";
  auto root = sysfs::pcie_root_from_link(bus_id, text);
  if (!root) return;
  check(xpu::pci_address::is_pcie_root(*root) && !text.starts_with('/') &&
            text.find(*root) != std::string_view::npos &&
            text.find(bus_id) != std::string_view::npos,
        "pcie_root_from_link gave a root the target does not lead to", std::string(text));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  xpu::fuzz::quiet_logging();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  check_attribute_parsers(text);
  check_bus_id(std::string(sysfs::trim_trailing_space(text)));
  check_probe_errors(text);
  check_library_text(text);
  check_pcie_root(text);
  check_pcie_link_parsers(text);
  return 0;
}
