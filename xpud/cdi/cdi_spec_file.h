// The CDI spec file on disk (default /var/run/cdi/kunlunxin-xpu.json), kept equal to the latest
// rendering (cdi_spec.h).
//
// Runtimes read the directory at any moment (containerd and podman watch it), so the file is
// never written in place: a temp file (`.<name>.tmp`, a dot file that is not `*.json`, which the
// CDI library skips) is written in the same directory, fsynced, and renamed over it, then the
// directory is fsynced. The file on disk is read back before a write and rewritten only when
// its bytes differ, so an unchanged spec keeps its inode and mtime, across restarts too; a file
// removed or edited by someone else is put back at the next check(). The directory is created
// (0755) when missing: /run is empty after boot and no runtime creates it.
//
// Threads: the daemon's main thread only.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

#include "common/result.h"

namespace xpud {

class CdiSpecFile {
 public:
  explicit CdiSpecFile(std::filesystem::path path);

  const std::filesystem::path& path() const { return path_; }

  // Makes the file hold `content`. Returns true when it was (re)written, false when it already
  // held exactly that.
  xpu::Result<bool> write(const std::string& content);

  // Whether the file is still the one the last write() left (same inode, size and mtime): a
  // cheap stat, so the daemon can notice a removed or replaced spec every cycle.
  bool unchanged_since_write() const;

  // Removes the file (and a temp file a crash left behind). Returns true when a file was removed.
  xpu::Result<bool> remove();

 private:
  struct Stamp {
    dev_t device;
    ino_t inode;
    off_t size;
    timespec modified;
  };
  std::optional<Stamp> stamp() const;

  const std::filesystem::path path_;
  const std::filesystem::path directory_;
  const std::string name_;
  std::optional<Stamp> written_;  // after the last successful write()
};

// Why `name` cannot be xpud's spec file name, or ok: a plain file name (no '/'), starting with
// "kunlunxin" (the contract, and what keeps xpud from replacing another vendor's spec), ending
// in ".json" (the CDI library reads only *.json and *.yaml), at most 255 bytes.
xpu::Status validate_cdi_spec_file_name(std::string_view name);

}  // namespace xpud
