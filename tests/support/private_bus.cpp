#include "tests/support/private_bus.h"

#include <signal.h>

#include <stdexcept>

#include "tests/support/wait.h"

namespace xpu::test {

PrivateBus::PrivateBus() {
  address_ = "unix:path=" + (dir_.path() / "bus").string();
  start();
}

void PrivateBus::start() {
  // A session-type bus: no policy, so the test user can own com.kunlunxin.xpud1.
  write_file(dir_.path() / "bus.conf",
             "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
             " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
             "<busconfig><type>session</type><listen>" + address_ + "</listen>"
             "<auth>EXTERNAL</auth><policy context=\"default\"><allow send_destination=\"*\" eavesdrop=\"true\"/>"
             "<allow eavesdrop=\"true\"/><allow own=\"*\"/></policy></busconfig>\n");
  std::filesystem::remove(dir_.path() / "bus");
  daemon_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{"/usr/bin/dbus-daemon", "--nofork", "--nopidfile",
                               "--config-file=" + (dir_.path() / "bus.conf").string()},
      dir_.path() / "dbus-daemon.log");
  if (!wait_until([&] { return std::filesystem::exists(dir_.path() / "bus"); }))
    throw std::runtime_error("dbus-daemon did not create its socket: " + daemon_->output());
}

void PrivateBus::stop() {
  daemon_->signal(SIGTERM);
  daemon_->wait(std::chrono::seconds(5));
  daemon_.reset();
}

void PrivateBus::restart() {
  if (daemon_) stop();
  start();
}

}  // namespace xpu::test
