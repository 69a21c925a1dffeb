// Test stand-in for the kubelet side of a projected service-account volume: lays a directory
// out and rotates it exactly the way the kubelet's atomic writer does, so the code under test
// sees real symlink swaps.
//
//   token -> ..data/token          (visible names, created once)
//   ..data -> ..2026_01_01_00_00_00.000000001
//   ..2026_01_01_00_00_00.000000001/{token,ca.crt,namespace}
//
// A rotation writes a new timestamped directory, points `..data_tmp` at it, renames
// `..data_tmp` over `..data` (the atomic step) and then deletes the old directory.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace shim::token_sync::testing {

class ProjectedVolume {
 public:
  // Creates `dir` if needed; publishes nothing yet.
  explicit ProjectedVolume(std::filesystem::path dir);

  // Publishes a new version holding exactly `files` (name -> content). Throws on failure.
  void publish(const std::map<std::string, std::string>& files);

  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::optional<std::string> current_;  // name of the timestamped directory ..data names
  unsigned long generation_ = 0;
};

// Reads a whole file; nullopt when it cannot be opened (missing, a directory, ...).
std::optional<std::string> read_file(const std::filesystem::path& path);

// Service-account content that passes validation.
std::string valid_ca_cert(const std::string& body = "MIIBszCCAVmgAwIBAgIUTestCertificateBody");

}  // namespace shim::token_sync::testing
