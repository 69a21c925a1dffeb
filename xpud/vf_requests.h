// ConfigureVirtualFunctions between the bus (main thread) and the driver (sampler thread).
//
// The bus method is asynchronous: the main thread hands the change to the sampler, which runs
// it on the driver thread before its next cycle and then discovers at once, and the reply goes
// out from the main thread when that cycle's snapshot has been published. So the main loop never
// waits on the driver (the kernel probes every new function while sriov_numvfs is written), and
// a caller that gets the reply already finds the new virtual functions on the bus when the
// driver made them synchronously.
//
// Threads: start() and deliver() on the main thread; the replies (which hold bus messages) stay
// there. Only a request number and its outcome cross to the sampler thread and back.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "xpud/backends/backend.h"
#include "xpud/backends/virtual_functions.h"
#include "xpud/sampler.h"

namespace xpud {

class VfRequests {
 public:
  using Reply = std::function<void(const std::optional<VfChangeError>&)>;

  VfRequests(std::shared_ptr<Backend> backend, Sampler& sampler);

  // Whether the backend can change virtual-function counts at all.
  bool supported() const;
  // Asks the driver thread to give `device` `count` virtual functions; `reply` runs later in
  // deliver().
  void start(const DeviceIdentity& device, unsigned count, Reply reply);
  // Runs the replies of the requests that finished.
  void deliver();

 private:
  struct Finished {
    std::mutex mutex;
    std::vector<std::pair<std::uint64_t, std::optional<VfChangeError>>> outcomes;
  };

  std::shared_ptr<Backend> backend_;
  Sampler& sampler_;
  // Shared with the sampler's callbacks, which may outlive this object at shutdown.
  std::shared_ptr<Finished> finished_ = std::make_shared<Finished>();
  std::map<std::uint64_t, Reply> waiting_;  // main thread only
  std::uint64_t next_id_ = 1;
};

}  // namespace xpud
