// /proc/xpu/probe_error: the kunlun driver lists there every device it failed to bring up, one
// line each: "BDF sn idx name errno strerror" (strerror may contain spaces).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>

namespace xpud::sysfs {

// The file may list a few hundred devices at most; anything larger is not that file.
inline constexpr std::size_t kMaxProbeErrorBytes = 16 * 1024;

struct ProbeFailure {
  std::string pci_bus_id;  // normalised
  std::string serial;
  unsigned driver_index = 0;
  std::string name;
  int error_number = 0;
  std::string error_text;  // may be empty

  // What an operator reads as the device's health reason.
  std::string reason() const;
};

// Failures by normalised bus id. Malformed lines are skipped with a debug line naming `source`
// and the line number; only printable ASCII is accepted, since the reason goes out over D-Bus.
std::map<std::string, ProbeFailure> parse_probe_errors(std::string_view text,
                                                       std::string_view source);

// Reads and parses the file; empty when it is missing or unusable (unusable gets a debug line).
std::map<std::string, ProbeFailure> read_probe_errors(const std::filesystem::path& path);

}  // namespace xpud::sysfs
