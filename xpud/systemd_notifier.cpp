#include "xpud/systemd_notifier.h"

#include <systemd/sd-daemon.h>
#include <time.h>  // NOLINT(modernize-deprecated-headers): POSIX clock_gettime, not in <ctime>

#include <spdlog/spdlog.h>

namespace xpud {

SystemdNotifier::SystemdNotifier() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) watchdog_ = std::chrono::microseconds(usec);
}

void SystemdNotifier::send(const std::string& message) {
  int rc = sd_notify(0, message.c_str());
  if (rc < 0) spdlog::debug("sd_notify failed: {}", rc);
}

void SystemdNotifier::ready(const std::string& status) {
  last_status_ = status;
  send("READY=1\nSTATUS=" + status);
}

void SystemdNotifier::reloading() {
  // MONOTONIC_USEC lets systemd >= 253 match the reload to this notification.
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const unsigned long long usec = static_cast<unsigned long long>(ts.tv_sec) * 1000000ull +
                                  static_cast<unsigned long long>(ts.tv_nsec) / 1000ull;
  send("RELOADING=1\nSTATUS=Reloading configuration\nMONOTONIC_USEC=" + std::to_string(usec));
}

void SystemdNotifier::stopping() {
  send("STOPPING=1\nSTATUS=Stopping");
}

void SystemdNotifier::status(const std::string& status) {
  if (status == last_status_) return;
  last_status_ = status;
  send("STATUS=" + status);
}

void SystemdNotifier::watchdog_ping() {
  send("WATCHDOG=1");
}

}  // namespace xpud
