// Tells when the service-account source directory may have changed, through inotify on the
// directory itself: the kubelet's `..data` swap is a rename inside it (IN_MOVED_TO), and a
// plain directory's files are written in it (IN_CLOSE_WRITE). Watching the files would not
// do: they resolve into a timestamped directory that the swap deletes.
//
// If the directory itself is deleted or moved away, the watch is gone; arm() attaches a new
// one to whatever the path names now.
#pragma once

#include <filesystem>

#include "common/result.h"
#include "common/unique_fd.h"

namespace shim::token_sync {

class SourceWatcher {
 public:
  static xpu::Result<SourceWatcher> create(std::filesystem::path dir);

  // Readable when events are queued.
  int fd() const { return fd_.get(); }

  // (Re)attaches the watch to the directory the path names now; drops a watch left on a
  // directory that moved away. Cheap when nothing changed.
  xpu::Status arm();
  bool armed() const { return wd_ >= 0; }

  // Consumes every queued event without blocking. True when one may mean the content changed
  // (including a lost watch or a queue overflow); false for none or only stale events.
  bool drain();

 private:
  SourceWatcher(std::filesystem::path dir, xpu::UniqueFd fd)
      : dir_(std::move(dir)), fd_(std::move(fd)) {}

  std::filesystem::path dir_;
  xpu::UniqueFd fd_;
  int wd_ = -1;
};

}  // namespace shim::token_sync
