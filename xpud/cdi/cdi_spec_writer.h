// Keeps the CDI spec file equal to the cards of the latest snapshot: renders (cdi_spec.h) only
// when the cards' identities changed, writes (cdi_spec_file.h) only when the text changed or the
// file on disk is no longer the one written, removes it when no card is left. Health is not in
// the identities, so a card turning Unhealthy and back never touches the file.
//
// Failures (directory not writable, disk full) are logged once per distinct error and retried
// with the next snapshot; they never stop the daemon, whose bus API does not depend on the spec.
//
// Threads: the daemon's main thread only.
#pragma once

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "xpud/cdi/cdi_spec.h"
#include "xpud/cdi/cdi_spec_file.h"
#include "xpud/device.h"

namespace xpud {

class CdiSpecWriter {
 public:
  CdiSpecWriter(std::filesystem::path path, std::string host_node_stand_in);

  const std::filesystem::path& path() const { return file_.path(); }

  // With each published snapshot.
  void update(const std::vector<DeviceIdentity>& cards);

  // The spec stops being ours to keep (CDI turned off or moved by a reload): removes the file.
  void withdraw();

 private:
  void sync();

  CdiSpecFile file_;
  const std::string host_node_stand_in_;
  std::optional<std::vector<DeviceIdentity>> rendered_for_;
  CdiSpecRendering rendering_;
  bool synced_ = false;
  std::string last_error_;
  std::set<std::string> reported_skips_;
};

}  // namespace xpud
