// The first process of a container whose cXPU instance bounds a memory share, watched through a
// pidfd that the container runtime's OCI hook opened (xpuctl hook-create-instance) and passed
// with Manager.CreateShareInstance. A pidfd names the process itself, not a number: it works
// across PID namespaces (the hook runs in the runtime's, xpud in the host's) and never takes a
// reused PID for the container (pidfd_open(2)).
//
// Main thread only, like the instance registry that keeps it.
#pragma once

#include <utility>

#include "common/unique_fd.h"

namespace xpud {

class ContainerProcess {
 public:
  explicit ContainerProcess(xpu::UniqueFd pidfd) : pidfd_(std::move(pidfd)) {}

  // Whether the process has exited, so the container is gone: a pidfd polls readable from then
  // on (pidfd_open(2), "poll"). Never blocks.
  bool exited() const;

 private:
  xpu::UniqueFd pidfd_;
};

}  // namespace xpud
