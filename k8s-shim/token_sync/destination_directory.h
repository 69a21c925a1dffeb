// The directory the synced files land in (on the host, read by the XPU runtime).
//
// Every operation goes through the directory's fd (openat/renameat with O_NOFOLLOW), so a
// symlink planted in the directory is replaced, never written through, and a reader always
// finds either the old or the new complete file: temp file, write, fsync, fchmod 0600, rename,
// fsync of the directory.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace shim::token_sync {

inline constexpr mode_t kDirectoryMode = 0700;
inline constexpr mode_t kFileMode = 0600;
// Temp files start with this, so a crashed run's leftovers can be found and removed.
inline constexpr std::string_view kTempFilePrefix = ".xpu-token-sync.";

class DestinationDirectory {
 public:
  // Creates the directory (and missing parents) when absent, refuses a symlink or a directory
  // owned by another user, and fixes its mode to 0700. Refuses it too when whoever could replace
  // it might be someone else: the directory holding it, as `parent_view` shows it (the host's
  // parent, mounted apart; by default path's own parent), must be root's or this process's and
  // writable by no one else, and its entry of path's name must be this very directory.
  static xpu::Result<DestinationDirectory> open(const std::filesystem::path& path,
                                                const std::filesystem::path& parent_view = {});

  enum class Change {
    Unchanged,        // same bytes, already 0600: nothing written
    ModeFixed,        // same bytes, mode set back to 0600 in place
    Created,          // there was no file
    Replaced,         // the content differed
    ReplacedSymlink,  // a symlink (or other non-file) stood there; replaced by a regular file
  };
  struct FileUpdate {
    Change change = Change::Unchanged;
    std::uint64_t previous_size = 0;  // of the regular file that was there, if any
    std::uint64_t size = 0;
  };

  // Makes `name` hold exactly `content`, rewriting only when the bytes differ.
  xpu::Result<FileUpdate> write_file(std::string_view name, std::string_view content);

  // Removes temp files a previous run left behind; returns their names.
  std::vector<std::string> remove_stale_temp_files();

  const std::filesystem::path& path() const { return path_; }
  bool created() const { return created_; }
  // The mode the directory had when it needed fixing.
  std::optional<mode_t> fixed_mode() const { return fixed_mode_; }

 private:
  DestinationDirectory(std::filesystem::path path, xpu::UniqueFd fd)
      : path_(std::move(path)), fd_(std::move(fd)) {}

  xpu::Result<std::string> write_temp_file(std::string_view name, std::string_view content);
  std::string where(std::string_view name) const { return (path_ / name).string(); }

  std::filesystem::path path_;
  xpu::UniqueFd fd_;
  bool created_ = false;
  std::optional<mode_t> fixed_mode_;
  unsigned temp_counter_ = 0;
};

}  // namespace shim::token_sync
