#include "xpud/requests/container_process.h"

#include <poll.h>

#include <cerrno>

namespace xpud {

bool ContainerProcess::exited() const {
  pollfd watched{.fd = pidfd_.get(), .events = POLLIN, .revents = 0};
  int ready = 0;
  do ready = ::poll(&watched, 1, 0);
  while (ready < 0 && errno == EINTR);
  // An fd that cannot be polled (POLLNVAL, POLLERR) tells nothing of the process: the instance
  // stays until the poststop hook destroys it.
  return ready > 0 && (watched.revents & POLLIN) != 0;
}

}  // namespace xpud
