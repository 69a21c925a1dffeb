#include "tests/support/private_bus.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <stdexcept>

#include "common/unique_fd.h"
#include "tests/support/wait.h"

namespace xpu::test {
namespace {

bool accepts_connections(const std::filesystem::path& socket_path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string path = socket_path.string();
  if (path.size() >= sizeof address.sun_path) return false;
  path.copy(address.sun_path, path.size());
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  return fd.valid() &&
         ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
}

}  // namespace

PrivateBus::PrivateBus() {
  address_ = "unix:path=" + (dir_.path() / "bus").string();
  start();
}

void PrivateBus::start() {
  // A session-type bus: no policy, so the test user can own com.kunlunxin.xpud1; any user may
  // connect (allow user="*"), so tests can call as an unprivileged one (setpriv) and see what
  // xpud itself decides about that caller.
  write_file(dir_.path() / "bus.conf",
             "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
             " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
             "<busconfig><type>session</type><listen>" +
                 address_ +
                 "</listen>"
                 "<auth>EXTERNAL</auth><policy context=\"default\"><allow user=\"*\"/><allow "
                 "send_destination=\"*\" eavesdrop=\"true\"/>"
                 "<allow eavesdrop=\"true\"/><allow own=\"*\"/></policy></busconfig>\n");
  std::filesystem::remove(dir_.path() / "bus");
  daemon_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{"/usr/bin/dbus-daemon", "--nofork", "--nopidfile",
                               "--config-file=" + (dir_.path() / "bus.conf").string()},
      dir_.path() / "dbus-daemon.log");
  // The socket file appears at bind(), a moment before listen(): a client that connects in
  // between is refused. Ready means a connection is accepted.
  if (!wait_until([&] { return accepts_connections(dir_.path() / "bus"); }))
    throw std::runtime_error("dbus-daemon does not accept connections: " + daemon_->output());
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
