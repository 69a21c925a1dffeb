#include "xpuctl/container_process.h"

#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "common/errno_text.h"

namespace xpuctl {

xpu::Result<xpu::UniqueFd> open_container_process(int pid) {
  if (pid <= 0) return xpu::Error{"the container state on standard input has no \"pid\""};
  // glibc 2.36 has a wrapper, older ones not; the system call is the same.
  xpu::UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0U)));
  if (pidfd.valid()) return pidfd;
  const int error = errno;
  if (error == ENOSYS) {
    xpu::UniqueFd never(::eventfd(0, EFD_CLOEXEC));
    if (never.valid()) return never;
  }
  return xpu::Error{"cannot watch the container's process " + std::to_string(pid) +
                    " (pidfd_open): " + xpu::errno_text(error)};
}

}  // namespace xpuctl
