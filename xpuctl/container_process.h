// What hook-create-instance hands xpud to know when the container is gone: a pidfd of its first
// process (the state's "pid", in the runtime's PID namespace, where the hook runs). xpud cannot
// open one itself: it may not see that namespace's numbers, and a number can be reused.
#pragma once

#include "common/result.h"
#include "common/unique_fd.h"

namespace xpuctl {

// pidfd_open(pid). On a kernel without pidfd_open (before Linux 5.3) an eventfd, which never
// polls readable: xpud then takes the container for alive until its poststop hook runs, as
// before. The error names the pid and the cause (a process already gone).
xpu::Result<xpu::UniqueFd> open_container_process(int pid);

}  // namespace xpuctl
