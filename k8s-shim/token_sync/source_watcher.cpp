#include "k8s-shim/token_sync/source_watcher.h"

#include <sys/inotify.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace shim::token_sync {
namespace {

constexpr std::uint32_t kWatchMask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                                     IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF |
                                     IN_ONLYDIR;

}  // namespace

xpu::Result<SourceWatcher> SourceWatcher::create(std::filesystem::path dir) {
  xpu::UniqueFd fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!fd.valid()) return xpu::Error{std::string("inotify_init1 failed: ") + std::strerror(errno)};
  return SourceWatcher(std::move(dir), std::move(fd));
}

xpu::Status SourceWatcher::arm() {
  int wd = ::inotify_add_watch(fd_.get(), dir_.c_str(), kWatchMask);
  if (wd < 0) return xpu::Error{dir_.string() + ": cannot watch: " + std::strerror(errno)};
  // Same directory, same wd; a different one means the old watch is on a directory that is no
  // longer the source.
  if (wd_ >= 0 && wd_ != wd) ::inotify_rm_watch(fd_.get(), wd_);
  wd_ = wd;
  return xpu::ok_status();
}

bool SourceWatcher::drain() {
  bool changed = false;
  alignas(inotify_event) char buffer[8192];
  while (true) {
    ssize_t n = ::read(fd_.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EAGAIN: drained
    for (ssize_t offset = 0; offset + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
      inotify_event event{};
      std::memcpy(&event, buffer + offset, sizeof event);
      offset += static_cast<ssize_t>(sizeof(inotify_event) + event.len);
      if (event.mask & IN_Q_OVERFLOW) {
        changed = true;
        continue;
      }
      if (event.wd != wd_ || wd_ < 0) continue;  // from a watch already dropped
      if (event.mask & IN_MOVE_SELF) {
        // The watch follows the inode, which is no longer at our path.
        ::inotify_rm_watch(fd_.get(), wd_);
        wd_ = -1;
      } else if (event.mask & (IN_DELETE_SELF | IN_IGNORED)) {
        wd_ = -1;
      }
      changed = true;
    }
  }
  return changed;
}

}  // namespace shim::token_sync
