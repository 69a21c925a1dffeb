#include "xpud/backends/sysfs_attribute.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>

#include <spdlog/spdlog.h>

#include "common/errno_text.h"
#include "common/unique_fd.h"

namespace xpud::sysfs {
namespace {

template <typename Int>
std::optional<Int> parse_decimal(std::string_view text, std::size_t max_digits) {
  if (text.empty() || text.size() > max_digits + 1) return std::nullopt;
  Int value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 10);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

xpu::Result<std::optional<std::string>> read_text_file(const std::filesystem::path& path,
                                                       std::size_t max_bytes) {
  return read_text_file_at(AT_FDCWD, path, max_bytes);
}

xpu::Result<std::optional<std::string>> read_text_file_at(int dir_fd,
                                                          const std::filesystem::path& relative,
                                                          std::size_t max_bytes) {
  xpu::UniqueFd fd(
      ::openat(dir_fd, relative.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) {
    int error = errno;
    if (error == ENOENT || error == ENOTDIR) return std::optional<std::string>{};
    return xpu::Error{"cannot open: " + xpu::errno_text(error)};
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return xpu::Error{"cannot stat: " + xpu::errno_text(errno)};
  if (!S_ISREG(st.st_mode)) return xpu::Error{"not a regular file"};

  // One byte more than allowed tells "exactly at the limit" from "too large".
  std::string text(max_bytes + 1, '\0');
  std::size_t used = 0;
  while (used < text.size()) {
    ssize_t n = ::read(fd.get(), text.data() + used, text.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      return xpu::Error{"read failed: " + xpu::errno_text(errno)};
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  if (used > max_bytes) return xpu::Error{"larger than " + std::to_string(max_bytes) + " bytes"};
  text.resize(used);
  if (text.find('\0') != std::string::npos) return xpu::Error{"binary content (NUL byte)"};
  return std::optional<std::string>{std::move(text)};
}

std::string_view trim_trailing_space(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\t'))
    text.remove_suffix(1);
  return text;
}

std::optional<std::uint16_t> parse_pci_id(std::string_view text) {
  text = trim_trailing_space(text);
  if (text.starts_with("0x") || text.starts_with("0X")) text.remove_prefix(2);
  if (text.empty() || text.size() > 4) return std::nullopt;
  std::uint16_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<int> parse_numa_node(std::string_view text) {
  auto value = parse_decimal<int>(trim_trailing_space(text), 5);
  if (!value || *value < -1 || *value > kMaxNumaNode) return std::nullopt;
  return value;
}

std::optional<unsigned> parse_vf_count(std::string_view text) {
  text = trim_trailing_space(text);
  if (text.starts_with('-') || text.starts_with('+')) return std::nullopt;
  auto value = parse_decimal<unsigned>(text, 5);
  if (!value || *value > 0xffff) return std::nullopt;
  return value;
}

std::optional<std::string> symlink_target_name(const std::filesystem::path& path) {
  char target[PATH_MAX];
  ssize_t n = ::readlink(path.c_str(), target, sizeof target);
  if (n <= 0 || static_cast<std::size_t>(n) >= sizeof target) return std::nullopt;
  std::string_view view(target, static_cast<std::size_t>(n));
  while (view.size() > 1 && view.back() == '/') view.remove_suffix(1);
  auto slash = view.rfind('/');
  if (slash != std::string_view::npos) view.remove_prefix(slash + 1);
  if (view.empty() || view == "." || view == "..") return std::nullopt;
  return std::string(view);
}

void log_ignored_file(const std::filesystem::path& path, std::string_view why) {
  log_ignored_problem(path.string() + ": " + std::string(why));
}

void log_ignored_problem(std::string_view problem) {
  spdlog::debug("sysfs: ignoring {}", problem);
}

}  // namespace xpud::sysfs
