// A real dbus-daemon on a private socket for the duration of a test.
#pragma once

#include <memory>
#include <string>

#include "tests/support/child_process.h"

namespace xpu::test {

class PrivateBus {
 public:
  PrivateBus();
  const std::string& address() const { return address_; }
  // Stops the daemon (for "the bus went away" tests); restart() brings it back on the same path.
  void stop();
  void restart();

 private:
  void start();
  TempDir dir_;
  std::string address_;
  std::unique_ptr<ChildProcess> daemon_;
};

}  // namespace xpu::test
