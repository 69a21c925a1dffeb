// Lets another thread wake a poll() loop: signal() from anywhere, poll fd(), then clear().
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "common/unique_fd.h"

namespace shim {

class WakeEvent {
 public:
  WakeEvent() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (!fd_.valid())
      throw std::runtime_error(std::string("eventfd failed: ") + std::strerror(errno));
  }
  int fd() const { return fd_.get(); }
  void signal() {
    std::uint64_t one = 1;
    // Only fails when the counter would overflow, i.e. a wake-up is pending anyway.
    [[maybe_unused]] auto n = ::write(fd_.get(), &one, sizeof one);
  }
  void clear() {
    std::uint64_t count = 0;
    [[maybe_unused]] auto n = ::read(fd_.get(), &count, sizeof count);
  }

 private:
  xpu::UniqueFd fd_;
};

}  // namespace shim
