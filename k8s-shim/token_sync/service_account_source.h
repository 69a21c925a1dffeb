// Reading the pod's service-account files (token, ca.crt, namespace) from a projected volume.
//
// The kubelet publishes each version of the volume in a new timestamped directory and swaps
// the `..data` symlink to it; the visible files are symlinks through `..data`. A reader that
// opens the three files one by one can straddle a swap, so a read counts only when `..data`
// named the same directory before and after it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "common/result.h"

namespace shim::token_sync {

inline constexpr const char* kTokenFile = "token";
inline constexpr const char* kCaCertFile = "ca.crt";
inline constexpr const char* kNamespaceFile = "namespace";

// No service-account file comes near this; anything larger is not what we expect.
inline constexpr std::size_t kMaxSourceFileBytes = 1 << 20;

struct ServiceAccountFiles {
  std::string token;           // bytes as read
  std::string ca_cert;         // bytes as read
  std::string namespace_file;  // bytes as read
  std::string namespace_name;  // namespace_file without trailing whitespace
};

// Reads and validates all three files; any problem is an error naming the file and the reason.
xpu::Result<ServiceAccountFiles> read_service_account(
    const std::filesystem::path& source_dir, std::size_t max_file_bytes = kMaxSourceFileBytes);

// The checks read_service_account applies, one per file (exposed for tests and reuse).
xpu::Status validate_token(std::string_view token);
xpu::Status validate_ca_cert(std::string_view ca_cert);
xpu::Status validate_namespace(std::string_view namespace_name);

}  // namespace shim::token_sync
