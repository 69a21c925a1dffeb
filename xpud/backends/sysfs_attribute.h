// Bounded, non-blocking reads of sysfs/procfs text files and strict parsers for the values they
// hold: the one way both hardware backends read the kernel's small files (the sysfs backend its
// whole view of the cards, the xpuml backend NUMA nodes). File contents come from outside the
// daemon: anything unexpected is reported as such and never trusted.
#pragma once

#include <fcntl.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace xpud::sysfs {

// A sysfs attribute is at most one page; more than that is not a file we understand.
inline constexpr std::size_t kMaxAttributeBytes = 4096;
// Highest NUMA node Linux can have (CONFIG_NODES_SHIFT is at most 10).
inline constexpr int kMaxNumaNode = 1023;

// The whole content of a regular file of at most max_bytes, as text (no NUL bytes).
// nullopt when the file does not exist (optional attributes are often absent); an error naming
// the file when it exists but cannot be used (not a regular file, too large, binary, I/O error).
// Opens with O_NONBLOCK so a FIFO planted in the tree cannot hang the caller.
xpu::Result<std::optional<std::string>> read_text_file(const std::filesystem::path& path,
                                                       std::size_t max_bytes = kMaxAttributeBytes);
// The same for a path relative to an open directory: spares the kernel the walk from "/" when
// one directory is read many times (the PCI scan).
xpu::Result<std::optional<std::string>> read_text_file_at(
    int dir_fd, const std::filesystem::path& relative, std::size_t max_bytes = kMaxAttributeBytes);

// Text without trailing spaces, tabs and newlines (sysfs ends every value with '\n').
std::string_view trim_trailing_space(std::string_view text);

// "0x1d22\n" -> 0x1d22. The 0x prefix is optional; 1-4 hex digits, nothing else.
std::optional<std::uint16_t> parse_pci_id(std::string_view text);
// "-1\n" or "0\n" -> the node; -1 means unknown. nullopt for anything outside [-1, kMaxNumaNode].
std::optional<int> parse_numa_node(std::string_view text);
// Decimal 0-65535, as sriov_numvfs / sriov_totalvfs hold.
std::optional<unsigned> parse_vf_count(std::string_view text);

// The last path component of a symlink's target ("kunlun" for driver -> ../drivers/kunlun);
// nullopt when path is not a symlink.
std::optional<std::string> symlink_target_name(const std::filesystem::path& path);

// Logs (debug) that a file's content was ignored, naming the file and why.
void log_ignored_file(const std::filesystem::path& path, std::string_view why);
// The same for a problem that already names the file ("<file>: <why>").
void log_ignored_problem(std::string_view problem);

// Reads `relative` in the open directory dir_fd and parses it: the value; nullopt when the file
// does not exist; an error "<dir_name / relative>: <why>" when the file is unusable (see
// read_text_file) or the parser rejects its content ("malformed content").
template <typename Parser>
auto parse_attribute_at(int dir_fd, const std::filesystem::path& dir_name,
                        const std::filesystem::path& relative, Parser parse)
    -> xpu::Result<decltype(parse(std::string_view{}))> {
  auto text = read_text_file_at(dir_fd, relative);
  if (!text.ok()) return xpu::Error{(dir_name / relative).string() + ": " + text.error()};
  if (!text->has_value()) return decltype(parse(std::string_view{})){};
  auto value = parse(**text);
  if (!value) return xpu::Error{(dir_name / relative).string() + ": malformed content"};
  return value;
}

// The same for a path relative to the working directory, or absolute.
template <typename Parser>
auto parse_attribute(const std::filesystem::path& path, Parser parse)
    -> xpu::Result<decltype(parse(std::string_view{}))> {
  return parse_attribute_at(AT_FDCWD, {}, path, parse);
}

// For attributes that are simply absent when unusable: parse_attribute_at's value, or nullopt
// when the file is missing, unusable or malformed; the last two get a debug log line naming the
// file (log_ignored_file).
template <typename Parser>
auto read_attribute_at(int dir_fd, const std::filesystem::path& dir_name,
                       const std::filesystem::path& relative, Parser parse)
    -> decltype(parse(std::string_view{})) {
  auto value = parse_attribute_at(dir_fd, dir_name, relative, parse);
  if (value.ok()) return *value;
  log_ignored_problem(value.error());
  return std::nullopt;
}

// The same for a path relative to the working directory, or absolute.
template <typename Parser>
auto read_attribute(const std::filesystem::path& path, Parser parse)
    -> decltype(parse(std::string_view{})) {
  return read_attribute_at(AT_FDCWD, {}, path, parse);
}

}  // namespace xpud::sysfs
