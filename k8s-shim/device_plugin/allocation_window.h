// When this plugin's Allocate calls are under way, so that the plugin's own pod-resources List
// waits them out. The kubelet marks the devices of an allocation as in use, calls Allocate
// outside its lock and records them for the pod only when Allocate has answered; a List that
// comes in between rebuilds the devices in use from the recorded ones (server_v1.go List calls
// UpdateAllocatedDevices, which does so whenever a finished pod is to be removed), so they come
// free and the kubelet gives them to the next pod too (kubernetes/kubernetes#137534; the
// real-node scenario 26 saw a card given to two pods 80 ms apart). Another client's List can
// still hit that window; this plugin's own does not.
//
// Threads: the gRPC threads open and close it, the held-cards watch's thread waits on it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace shim {

class AllocationWindow {
 public:
  using Clock = std::chrono::steady_clock;

  // After the last Allocate answered, how long a List still waits: the kubelet records the
  // devices right after the answer arrives, under its lock, within this on a loaded node.
  static constexpr std::chrono::milliseconds kSettle{100};

  // Held for the length of one Allocate call.
  class Open {
   public:
    explicit Open(AllocationWindow& window);
    ~Open();
    Open(const Open&) = delete;
    Open& operator=(const Open&) = delete;

   private:
    AllocationWindow& window_;
  };

  // Returns once no Allocate is under way and kSettle has passed since the last one ended, or
  // at `deadline` (a List must not wait for ever behind a stream of them).
  void wait_closed(Clock::time_point deadline);

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  unsigned open_ = 0;         // guarded by mutex_
  Clock::time_point closed_;  // when the last one ended; guarded by mutex_
};

}  // namespace shim
