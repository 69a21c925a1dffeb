// SIGTERM/SIGINT (and optionally SIGHUP) delivered through a signalfd, so a program's loops
// can wait on them next to their other file descriptors instead of in an async handler.
//
// Construct it in main() before starting any thread: it blocks the signals for the calling
// thread, and threads started afterwards inherit the mask. Construct it first thing: a signal
// that comes before it meets its default action, which for a container's PID 1 is to be
// ignored, so a stop asked for that early would be lost. Once a stop signal was taken, the
// destructor leaves the signals blocked (see there).
#pragma once

#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX sigset_t, not in <csignal>

#include <chrono>
#include <optional>

#include "common/unique_fd.h"

namespace xpu {

class StopSignals {
 public:
  explicit StopSignals(bool include_sighup = false);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Readable when a signal is pending.
  int fd() const { return fd_.get(); }
  // Consumes one pending signal; nullopt when none is pending.
  std::optional<int> take();
  // Waits up to `timeout` for SIGTERM/SIGINT; returns true when one arrived (SIGHUP is consumed
  // and ignored here). Once a stop signal was seen, keeps returning true.
  bool wait_for_stop(std::chrono::milliseconds timeout);
  bool stop_requested() const { return stopped_; }

 private:
  sigset_t mask_{};
  sigset_t previous_{};
  UniqueFd fd_;
  bool stopped_ = false;
};

}  // namespace xpu
