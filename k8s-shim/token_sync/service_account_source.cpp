#include "k8s-shim/token_sync/service_account_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>

#include "common/ascii.h"
#include "common/errno_text.h"
#include "common/unique_fd.h"
#include "k8s-shim/printable.h"

namespace shim::token_sync {
namespace {

// A swap in the middle of a read is retried; a source that swaps this often is broken.
constexpr int kMaxReadAttempts = 5;

bool is_trailing_space(char c) {
  return c == '\n' || c == '\r' || c == ' ' || c == '\t';
}

std::string_view trim_trailing_space(std::string_view text) {
  while (!text.empty() && is_trailing_space(text.back())) text.remove_suffix(1);
  return text;
}

// Follows the volume's symlinks on purpose (that is how a projected volume is laid out), but
// never blocks on a FIFO and never reads more than the cap.
xpu::Result<std::string> read_capped_file(const std::filesystem::path& path,
                                          std::size_t max_bytes) {
  xpu::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) return xpu::Error{path.string() + ": cannot open: " + xpu::errno_text(errno)};
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    return xpu::Error{path.string() + ": cannot stat: " + xpu::errno_text(errno)};
  if (!S_ISREG(st.st_mode)) return xpu::Error{path.string() + ": is not a regular file"};
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    return xpu::Error{path.string() + ": is " + std::to_string(st.st_size) +
                      " bytes, over the limit of " + std::to_string(max_bytes)};
  std::string content;
  std::array<char, 16384> buffer{};
  while (true) {
    ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return xpu::Error{path.string() + ": cannot read: " + xpu::errno_text(errno)};
    if (n == 0) break;
    content.append(buffer.data(), static_cast<std::size_t>(n));
    // The size can grow after fstat; the cap holds regardless.
    if (content.size() > max_bytes)
      return xpu::Error{path.string() + ": is over the limit of " + std::to_string(max_bytes) +
                        " bytes"};
  }
  return content;
}

// Which timestamped directory `..data` names now; nullopt when the source is a plain directory.
std::optional<std::string> data_version(const std::filesystem::path& source_dir) {
  std::array<char, 4096> target{};
  ssize_t n = ::readlink((source_dir / "..data").c_str(), target.data(), target.size());
  if (n < 0) return std::nullopt;
  return std::string(target.data(), static_cast<std::size_t>(n));
}

xpu::Result<ServiceAccountFiles> read_once(const std::filesystem::path& source_dir,
                                           std::size_t max_file_bytes) {
  ServiceAccountFiles files;
  auto token = read_capped_file(source_dir / kTokenFile, max_file_bytes);
  if (!token) return xpu::Error{token.error()};
  auto ca_cert = read_capped_file(source_dir / kCaCertFile, max_file_bytes);
  if (!ca_cert) return xpu::Error{ca_cert.error()};
  auto namespace_file = read_capped_file(source_dir / kNamespaceFile, max_file_bytes);
  if (!namespace_file) return xpu::Error{namespace_file.error()};
  files.token = std::move(*token);
  files.ca_cert = std::move(*ca_cert);
  files.namespace_file = std::move(*namespace_file);
  files.namespace_name = std::string(trim_trailing_space(files.namespace_file));
  return files;
}

}  // namespace

xpu::Status validate_token(std::string_view token) {
  std::string_view body = trim_trailing_space(token);
  if (body.empty()) return xpu::Error{"is empty"};
  for (std::size_t i = 0; i < body.size(); ++i) {
    auto byte = static_cast<unsigned char>(body[i]);
    // A bearer token goes into an HTTP header: a space, control or non-ASCII byte in it is
    // corruption at best and header injection at worst.
    if (byte <= 0x20 || byte >= 0x7f)
      return xpu::Error{"has a space, control or non-ASCII byte at offset " + std::to_string(i)};
  }
  return xpu::ok_status();
}

xpu::Status validate_ca_cert(std::string_view ca_cert) {
  if (trim_trailing_space(ca_cert).empty()) return xpu::Error{"is empty"};
  const auto begin = ca_cert.find("-----BEGIN CERTIFICATE-----");
  if (begin == std::string_view::npos)
    return xpu::Error{"has no PEM certificate (no BEGIN CERTIFICATE line)"};
  if (ca_cert.find("-----END CERTIFICATE-----", begin) == std::string_view::npos)
    return xpu::Error{"has a truncated PEM certificate (no END CERTIFICATE line)"};
  return xpu::ok_status();
}

xpu::Status validate_namespace(std::string_view namespace_name) {
  if (namespace_name.empty()) return xpu::Error{"is empty"};
  if (namespace_name.size() > 63) return xpu::Error{"is longer than 63 characters"};
  if (!xpu::is_ascii_lower_alnum(namespace_name.front()) ||
      !xpu::is_ascii_lower_alnum(namespace_name.back()))
    return xpu::Error{"is not a DNS-1123 label (must start and end with [a-z0-9])"};
  for (char c : namespace_name)
    if (!xpu::is_ascii_lower_alnum(c) && c != '-')
      return xpu::Error{"is not a DNS-1123 label (only [a-z0-9-] allowed)"};
  return xpu::ok_status();
}

xpu::Result<ServiceAccountFiles> read_service_account(const std::filesystem::path& source_dir,
                                                      std::size_t max_file_bytes) {
  std::optional<xpu::Result<ServiceAccountFiles>> last;
  for (int attempt = 0; attempt < kMaxReadAttempts; ++attempt) {
    auto before = data_version(source_dir);
    auto files = read_once(source_dir, max_file_bytes);
    auto after = data_version(source_dir);
    if (before == after) {
      last.emplace(std::move(files));
      break;
    }
    last.emplace(
        xpu::Error{source_dir.string() +
                   ": the ..data link kept changing while reading (rotation in progress)"});
  }
  auto& files = *last;
  if (!files) return files;
  if (auto status = validate_token(files->token); !status)
    return xpu::Error{(source_dir / kTokenFile).string() + ": " + status.error()};
  if (auto status = validate_ca_cert(files->ca_cert); !status)
    return xpu::Error{(source_dir / kCaCertFile).string() + ": " + status.error()};
  if (auto status = validate_namespace(files->namespace_name); !status)
    return xpu::Error{(source_dir / kNamespaceFile).string() + ": '" +
                      printable_excerpt(files->namespace_name) + "' " + status.error()};
  return std::move(files);
}

}  // namespace shim::token_sync
