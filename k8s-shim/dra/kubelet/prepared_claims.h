// The checkpoint of prepared claims (uid -> PreparedClaim), so that a restart of the plugin in
// the middle of a pod's life neither loses nor doubles a claim: prepare of a recorded UID answers
// the recorded devices, unprepare removes the record.
//
// On disk (<plugin-dir>/checkpoint.json) it is JSON with a format version and a checksum of the
// claims, written atomically and durably before NodePrepareResources answers. A file that does
// not load (torn, edited, unknown version) is renamed aside to "<name>.corrupt" with an error log
// and the store starts empty: the kubelet calls prepare again for every running pod's claims.
//
// Not synchronised: the DRA service owns it and serialises every call.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "common/result.h"
#include "k8s-shim/dra/kubelet/claim_preparation.h"

namespace shim::dra {

class PreparedClaims {
 public:
  static constexpr int kFormatVersion = 1;

  // Loads `file` (absent: empty). Never fails: what cannot be loaded is set aside and logged.
  static PreparedClaims load(std::filesystem::path file);

  // The recorded claim, or nullptr.
  const PreparedClaim* find(std::string_view uid) const;
  // Records the claim (replacing one of the same UID) and writes the file; on a write error the
  // store is left as it was.
  xpu::Status add(PreparedClaim claim);
  // Forgets the claim and writes the file; an unknown UID is success (nothing written).
  xpu::Status remove(std::string_view uid);

  const std::map<std::string, PreparedClaim, std::less<>>& claims() const { return claims_; }
  const std::filesystem::path& file() const { return file_; }

  // The file's text for these claims, and the claims a text holds (an error says why not);
  // exposed for the tests of the format.
  static std::string serialize(const std::map<std::string, PreparedClaim, std::less<>>& claims);
  static xpu::Result<std::map<std::string, PreparedClaim, std::less<>>> parse(
      std::string_view text);

 private:
  explicit PreparedClaims(std::filesystem::path file) : file_(std::move(file)) {}
  xpu::Status save(const std::map<std::string, PreparedClaim, std::less<>>& claims) const;

  std::filesystem::path file_;
  std::map<std::string, PreparedClaim, std::less<>> claims_;
};

}  // namespace shim::dra
