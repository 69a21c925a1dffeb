// Changes asked of the driver over the bus (ConfigureVirtualFunctions, CreateInstance,
// DestroyInstance), between the bus (main thread) and the driver (sampler thread).
//
// The bus methods are asynchronous: the main thread hands the change to the sampler, which runs
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
#include <string>
#include <vector>

#include "xpud/backends/backend.h"
#include "xpud/backends/driver_change.h"
#include "xpud/sampling/sampler.h"

namespace xpud {

class DriverRequests {
 public:
  // Runs on the driver thread, with the backend; nullopt when the change is made.
  using Job = std::function<std::optional<DriverChangeError>(Backend&)>;
  using Reply = std::function<void(const std::optional<DriverChangeError>&)>;

  DriverRequests(std::shared_ptr<Backend> backend, Sampler& sampler);

  // What the backend can change: virtual_functions() and cxpu_instances() may be asked from any
  // thread; their calls belong in a Job.
  Backend& backend() const { return *backend_; }
  // Runs `job` on the driver thread; `reply` runs later in deliver(). `what` ("set virtual
  // functions of xpu0") names the change when the driver does not answer in time.
  void start(std::string what, Job job, Reply reply);
  // Runs the replies of the requests that finished.
  void deliver();

 private:
  struct Finished {
    std::mutex mutex;
    std::vector<std::pair<std::uint64_t, std::optional<DriverChangeError>>> outcomes;
  };

  std::shared_ptr<Backend> backend_;
  Sampler& sampler_;
  // Shared with the sampler's callbacks, which may outlive this object at shutdown.
  std::shared_ptr<Finished> finished_ = std::make_shared<Finished>();
  std::map<std::uint64_t, Reply> waiting_;  // main thread only
  std::uint64_t next_id_ = 1;
};

}  // namespace xpud
