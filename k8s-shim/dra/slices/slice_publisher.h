// Keeps this node's pool of xpu.kunlunxin.com (one ResourceSlice of devices, and with memory
// shares on the slices of the cards' counter sets: slice_content.h) equal to the cards xpud
// reports, with the fewest writes: equal slices found at start are adopted as they are, and
// afterwards writes happen only when the pool changes. A change rewrites every slice of the pool
// at the next generation (the scheduler reads a pool only when all its slices of the newest
// generation are there, so it never pairs new devices with old counters), reusing the slices
// that exist, then deletes the surplus.
//
// Stopping leaves the slices in place on purpose: the kubelet removes the slices of a driver
// that is gone, and a restarting shim adopts its own slices without a write.
//
// Threads: set_devices() may be called from any thread (the xpud watcher's); reconcile() and
// writes() from one thread at a time (the role's main loop). The desired state is the only thing
// both touch and is guarded by a mutex; what the API holds is the reconcile thread's alone.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/xpud_types.h"
#include "k8s-shim/dra/kube/kube_api.h"
#include "k8s-shim/dra/kube/resource_slice.h"
#include "k8s-shim/dra/share_policy.h"
#include "k8s-shim/dra/slices/device_taints.h"

namespace shim::dra {

class SlicePublisher {
 public:
  using Clock = std::chrono::steady_clock;

  // Back-off after a failed call: from kFirstRetry doubling up to kMaxRetry.
  static constexpr std::chrono::seconds kFirstRetry{1};
  static constexpr std::chrono::seconds kMaxRetry{30};
  // How often the published slice is checked against the API (someone may have deleted or edited
  // it); a check that finds it as written costs one list and no write.
  static constexpr std::chrono::minutes kResync{10};

  SlicePublisher(KubeApi& api, std::string node_name, TaintPolicy taints = {},
                 SharePolicy shares = {});

  // Stores the desired state for the next reconcile(); true when it changed (the caller then
  // wakes its reconcile loop). A view from an xpud that was never reached (not present, no
  // devices) changes nothing, so nothing is published before xpud answered once.
  bool set_devices(const xpu::DeviceView& view);

  // Makes at most the API calls needed now; returns when it wants to be called again. Calling
  // sooner is harmless (during a back-off it returns at once); the caller should call it soon
  // after set_devices() too, since the returned time does not know of later changes.
  Clock::time_point reconcile(Clock::time_point now);

  // Whether the API holds the pool as some set_devices() asked for (written, or found so), even
  // if a newer change is not written yet: the scheduler knows the node's cards. Reconcile thread.
  bool published() const { return published_version_ != 0; }

  // Whether the API holds the pool exactly as the last set_devices() asked. Reconcile thread.
  bool up_to_date() const;

  // Successful create/update/delete calls so far.
  std::uint64_t writes() const { return writes_.load(); }

 private:
  struct Desired {
    std::vector<ResourceSliceSpec> slices;  // at generation 0, in desired_slices()' order
    std::uint64_t version = 0;              // +1 per change of `slices`
  };
  enum class Outcome { done, retry_now, failed };

  Outcome sync(const Desired& desired);
  Outcome relist_and_converge(const Desired& desired);
  // Writes the pool at the next generation over `existing` (updated newest first, created when
  // fewer, the surplus deleted after).
  Outcome write_pool(const Desired& desired, std::vector<ResourceSlice> existing);
  // The slices to write for `desired`: a taint already published keeps the time the API server
  // gave it, and no taints at all once the server showed it drops them; no counters (nor
  // shares: without_counters()) once it showed it drops those.
  std::vector<ResourceSliceSpec> specs_for(const Desired& desired, std::int64_t generation) const;
  // Whether `slices` are exactly the pool `desired` asks for at their (common) generation; if so
  // they are reordered as desired.
  bool holds(std::vector<ResourceSlice>& slices, const Desired& desired) const;
  void note_server_dropped_taints(const ResourceSliceSpec& sent, const ResourceSlice& written);
  // True when this write showed, for the first time, that the server drops counters.
  bool note_server_dropped_counters(const ResourceSliceSpec& sent, const ResourceSlice& written);
  // False when one could not be deleted (then a relist is due).
  bool delete_extras(const std::vector<ResourceSlice>& extras);
  void note_failure(const kube::ApiError& error);

  KubeApi& api_;
  const std::string node_name_;
  const TaintPolicy taint_policy_;
  const SharePolicy share_policy_;

  mutable std::mutex desired_mutex_;
  std::optional<Desired> desired_;  // guarded by desired_mutex_; nullopt: publish nothing

  // Reconcile thread only.
  std::vector<ResourceSlice> published_;  // as the API last returned them, in desired order
  std::uint64_t published_version_ = 0;   // 0: nothing published (versions start at 1)
  bool need_list_ = true;
  std::int64_t highest_generation_ = 0;
  Clock::time_point next_attempt_{};
  Clock::time_point next_resync_{};
  std::chrono::seconds backoff_{0};
  bool failing_ = false;
  kube::ApiError conflict_;  // the 409/404 that asked for the retry, logged if the retry fails too
  // False once a write came back without the taints it carried: an API server before 1.36, or
  // with DRADeviceTaints off, drops the field, and writing it again would change nothing but
  // cost a write per resync. For the process's life: a server upgrade restarts nothing here,
  // but the `healthy` attribute still says what the taint would have.
  bool server_keeps_taints_ = true;
  // False once a write came back without the counters it carried: DRAPartitionableDevices off
  // (Kubernetes before 1.36). The pool is then published without counters and shares, which
  // would otherwise be a card's shares and its whole-card device unbound from each other; the
  // VFs stay. For the process's life, as above.
  bool server_keeps_counters_ = true;

  std::atomic<std::uint64_t> writes_{0};
};

}  // namespace shim::dra
