#include "common/stop_signals.h"

#include <poll.h>
#include <pthread.h>
#include <sys/signalfd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace xpu {

StopSignals::StopSignals(bool include_sighup) {
  sigemptyset(&mask_);
  sigaddset(&mask_, SIGTERM);
  sigaddset(&mask_, SIGINT);
  if (include_sighup) sigaddset(&mask_, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &mask_, &previous_);
  fd_.reset(signalfd(-1, &mask_, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd_.valid())
    throw std::runtime_error(std::string("signalfd failed: ") + std::strerror(errno));
}

StopSignals::~StopSignals() {
  // A stop signal that arrives while the program stops (a second SIGTERM, SIGINT after SIGTERM)
  // asks for what is already happening. Unblocked, it would meet its default action and turn the
  // orderly exit into death by signal: consume the pending ones, and keep the signals blocked
  // once a stop was requested.
  while (take()) {
  }
  if (!stopped_) pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

std::optional<int> StopSignals::take() {
  signalfd_siginfo info{};
  ssize_t n = ::read(fd_.get(), &info, sizeof info);
  if (n != static_cast<ssize_t>(sizeof info)) return std::nullopt;
  int signo = static_cast<int>(info.ssi_signo);
  if (signo == SIGTERM || signo == SIGINT) stopped_ = true;
  return signo;
}

bool StopSignals::wait_for_stop(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!stopped_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() < 0) break;
    pollfd pfd{fd_.get(), POLLIN, 0};
    int rc = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (rc < 0 && errno != EINTR) break;
    if (rc > 0) take();
  }
  return stopped_;
}

}  // namespace xpu
