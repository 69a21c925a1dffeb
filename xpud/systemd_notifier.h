// The sd_notify protocol: readiness, reload, stop, STATUS= lines and the watchdog. Every call is a
// no-op when xpud does not run under systemd (no $NOTIFY_SOCKET).
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace xpud {

class SystemdNotifier {
 public:
  SystemdNotifier();

  void ready(const std::string& status);
  void reloading();
  void stopping();
  void status(const std::string& status);
  void watchdog_ping();

  // The interval systemd expects pings at most this far apart (WatchdogSec=); nullopt when off.
  std::optional<std::chrono::microseconds> watchdog_interval() const { return watchdog_; }

 private:
  void send(const std::string& message);
  std::optional<std::chrono::microseconds> watchdog_;
  std::string last_status_;
};

}  // namespace xpud
