// When to sync: at start, whenever the source directory changes, every `interval` as a safety
// net, until SIGTERM/SIGINT. One thread, one poll() over the signal fd and the inotify fd.
#pragma once

#include <chrono>

#include "common/stop_signals.h"
#include "k8s-shim/token_sync/token_syncer.h"

namespace shim::token_sync {

// How soon a lost source watch (the directory vanished) is tried again.
inline constexpr std::chrono::seconds kRewatchDelay{1};
// How soon a pass whose write the destination refused is tried again; the delay doubles on each
// failure, up to the interval.
inline constexpr std::chrono::seconds kFirstWriteRetry{1};

// Returns the exit status: 0 after a stop signal. Sync failures are logged and retried, never
// fatal: the previous copy keeps serving the runtime meanwhile.
int run_sync_loop(const TokenSyncConfig& config, std::chrono::seconds interval,
                  xpu::StopSignals& stop);

}  // namespace shim::token_sync
