#include "k8s-shim/token_sync/token_sync_loop.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include <spdlog/spdlog.h>

#include "k8s-shim/poll_timeout.h"
#include "k8s-shim/token_sync/source_watcher.h"

namespace shim::token_sync {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

int run_sync_loop(const TokenSyncConfig& config, std::chrono::seconds interval,
                  xpu::StopSignals& stop) {
  std::optional<SourceWatcher> watcher;
  if (auto created = SourceWatcher::create(config.source_dir)) {
    watcher.emplace(std::move(*created));
  } else {
    spdlog::error("{}; falling back to syncing every {} s only", created.error(), interval.count());
  }
  // A missing source is retried every kRewatchDelay: say so once, not every second.
  bool watch_failure_reported = false;
  auto arm = [&]() -> bool {
    if (!watcher) return false;
    auto armed = watcher->arm();
    if (!armed && !watch_failure_reported) {
      spdlog::error("{}; retrying every {} s", armed.error(), kRewatchDelay.count());
      watch_failure_reported = true;
    } else if (armed && watch_failure_reported) {
      spdlog::info("watching {} again", config.source_dir.string());
      watch_failure_reported = false;
    }
    return armed.ok();
  };
  arm();

  remove_stale_temp_files(config);
  // After a refused write the next pass comes after retry_delay, not the whole interval: a full
  // disk that was freed would otherwise keep the runtime on a stale token for up to an interval.
  std::chrono::seconds retry_delay = kFirstWriteRetry;
  auto next_sync_after = [&](const SyncReport& report) {
    if (!report.destination_failed) {
      retry_delay = kFirstWriteRetry;
      return Clock::now() + interval;
    }
    const auto delay = std::min(retry_delay, interval);
    spdlog::info("trying {} again in {} s", config.dest_dir.string(), delay.count());
    retry_delay = std::min(retry_delay * 2, interval);
    return Clock::now() + delay;
  };
  auto next_sync = next_sync_after(sync_once(config));
  auto next_rewatch = Clock::now() + kRewatchDelay;

  while (true) {
    const bool watching = watcher && watcher->armed();
    auto wake = watcher && !watching ? std::min(next_sync, next_rewatch) : next_sync;
    pollfd fds[2] = {{stop.fd(), POLLIN, 0}, {watcher ? watcher->fd() : -1, POLLIN, 0}};
    int ready = ::poll(fds, 2, poll_timeout_ms(wake));
    if (ready < 0 && errno != EINTR) {
      spdlog::error("poll failed: {}", std::strerror(errno));
      return 1;
    }
    if (fds[0].revents & POLLIN) {
      stop.take();
      if (stop.stop_requested()) {
        spdlog::info("stop signal received; exiting");
        return 0;
      }
    }

    bool due = false;
    if (watcher && (fds[1].revents & POLLIN) && watcher->drain()) {
      due = true;
      if (!watcher->armed()) {
        spdlog::warn("{} was deleted or moved; watching the path again",
                     config.source_dir.string());
        next_rewatch = Clock::now();
      }
    }
    if (watcher && !watcher->armed() && Clock::now() >= next_rewatch) {
      // Whatever appeared at the path while unwatched has not been seen yet.
      if (arm()) due = true;
      next_rewatch = Clock::now() + kRewatchDelay;
    }
    if (Clock::now() >= next_sync) {
      // The path may name a new directory even though the old one was never deleted.
      if (watcher && watcher->armed()) arm();
      due = true;
    }
    if (due) next_sync = next_sync_after(sync_once(config));
  }
}

}  // namespace shim::token_sync
