// --web-config-file: TLS and basic auth in the exporter-toolkit format that node_exporter and
// the other Prometheus exporters read, so one file (and one cert-manager Secret) serves them all.
//
//   tls_server_config:
//     cert_file: server.crt          # relative paths are relative to this file's folder
//     key_file: server.key
//     client_auth_type: RequireAndVerifyClientCert
//     client_ca_file: ca.crt
//     min_version: TLS12             # optional: TLS10..TLS13, also max_version
//   basic_auth_users:
//     prometheus: $2y$10$...         # bcrypt hashes only
//
// Unknown keys are errors, as they are for exporter-toolkit: a misspelt key must not silently
// leave the exporter open.
#pragma once

#include <sys/types.h>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace shim::exporter {

enum class ClientAuth {
  None,              // NoClientCert
  VerifyIfGiven,     // VerifyClientCertIfGiven
  RequireAndVerify,  // RequireAndVerifyClientCert
};

struct WebConfig {
  struct Tls {
    std::string cert_pem;
    std::string key_pem;
    std::string client_ca_pem;  // empty unless client_auth is not None
    ClientAuth client_auth = ClientAuth::None;
    // GnuTLS priority string from min_version (TLS12 when unset) and max_version (TLS13).
    std::string priorities;
  };
  std::optional<Tls> tls;
  std::map<std::string, std::string> basic_auth_users;  // user -> bcrypt hash

  bool empty() const { return !tls && basic_auth_users.empty(); }
};

// What a file looked like when it was read; a change of any field means it was rewritten
// (Kubernetes swaps a Secret's files by renaming a symlinked folder, which changes the inode).
struct FileStamp {
  std::string path;
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = -1;
  long long mtime_ns = -1;
  bool operator==(const FileStamp&) const = default;
};

struct LoadedWebConfig {
  WebConfig config;
  std::vector<FileStamp> files;  // the config file and every file it names, as read
};

// Reads and checks the file and everything it names. An error names the file and the key.
xpu::Result<LoadedWebConfig> load_web_config(const std::string& path);

// Whether any of `files` looks different now (or cannot be read any more).
bool web_config_files_changed(const std::vector<FileStamp>& files);

}  // namespace shim::exporter
