// One sync pass: read and validate the service-account files, then bring the destination
// directory in line (only files whose bytes differ are rewritten). Kept apart from the loop
// that decides when to run it, so it can be tested on its own.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "k8s-shim/token_sync/api_server.h"
#include "k8s-shim/token_sync/service_account_source.h"

namespace shim::token_sync {

inline constexpr const char* kKubeconfigFile = "kubeconfig";
inline constexpr const char* kDefaultSourceDir = "/var/run/secrets/kubernetes.io/serviceaccount";
inline constexpr const char* kDefaultDestDir = "/xpu-runtime/auth";

struct TokenSyncConfig {
  std::filesystem::path source_dir = kDefaultSourceDir;
  // Absolute: the kubeconfig names the files in it by this path.
  std::filesystem::path dest_dir = kDefaultDestDir;
  // The host's directory holding dest_dir, mounted apart (read-only) so that its owner, its mode
  // and its entry for dest_dir can be checked as the host has them; empty: dest_dir's parent.
  std::filesystem::path dest_parent_dir;
  ApiServerEnvironment api_server;
  std::size_t max_source_file_bytes = kMaxSourceFileBytes;
};

// What one pass did. Every change and every error has already been logged.
struct SyncReport {
  std::vector<std::string> changed_files;  // names within dest_dir that were written or fixed
  std::vector<std::string> errors;
  // The destination refused a write (disk full, read-only, gone): unlike a bad source, no event
  // says when it can take one again, so the caller retries soon.
  bool destination_failed = false;
  bool ok() const { return errors.empty(); }
};

// When the source is bad nothing is written, so the last good copy stays. When only the API
// server environment is bad, token, ca.crt and namespace are still synced and the kubeconfig
// is left as it was.
SyncReport sync_once(const TokenSyncConfig& config);

// Removes temp files a crashed earlier run left in dest_dir (logged); once at start-up.
void remove_stale_temp_files(const TokenSyncConfig& config);

}  // namespace shim::token_sync
