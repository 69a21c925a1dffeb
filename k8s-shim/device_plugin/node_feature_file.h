// One feature file in node-feature-discovery's `features.d` directory, kept equal to the
// latest content the device plugin computed (node_features.h).
//
// NFD's worker may read the file at any moment, so it is never written in place: a temp file
// (`.<name>.tmp`, a dot file, which NFD skips) is written in the same directory and renamed over
// it. The file on disk is read back before every write and rewritten only when its bytes differ,
// so unchanged facts leave it (inode, mtime) alone, across restarts too, and a file removed or
// edited by someone else is put back at the next sync. No fsync: after a crash the next start
// rewrites whatever is there.
//
// Threads: set_content() from any thread (the xpud watcher); sync() and remove() from the
// role's thread only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>

#include "common/result.h"

namespace shim {

class NodeFeatureFile {
 public:
  explicit NodeFeatureFile(std::filesystem::path path);

  // The content the file should hold from now on (each call counts as news for sync's log).
  void set_content(std::string content);

  // Makes the file hold the latest content, if any has been set. Failures (the directory is
  // missing, not writable...) are logged, once per distinct error, and retried at the next call.
  void sync();

  // At stop: removes the file (and a temp file a crash left behind). The labels go with it at
  // NFD's next pass, which is what uninstalling or turning the feature off must do.
  void remove();

  const std::filesystem::path& path() const { return path_; }

 private:
  // True when the file was (re)written, false when it already held `content`.
  xpu::Result<bool> write_if_changed(const std::string& content);

  const std::filesystem::path path_;
  const std::filesystem::path directory_;
  const std::string name_;

  std::mutex mutex_;  // guards the two below
  std::optional<std::string> content_;
  std::uint64_t generation_ = 0;

  // Role thread only.
  std::uint64_t synced_generation_ = 0;
  std::string last_error_;
};

// Why `path` cannot name a feature file NFD reads (empty, a directory, a dot file), or ok.
xpu::Status validate_feature_file_path(std::string_view path);

}  // namespace shim
