// Samples every card on one schedule, on its own thread, and publishes immutable snapshots.
//
// Threads: the sampler thread owns the backend calls (through a TimeBoxedExecutor, so each driver
// call is bounded) and the HealthMonitor. Readers on any thread get the latest snapshot with
// latest(), which never touches the driver.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "xpud/backends/backend.h"
#include "xpud/sampling/discovery_schedule.h"
#include "xpud/sampling/driver_stall.h"
#include "xpud/sampling/health_monitor.h"
#include "xpud/sampling/pcie_health.h"
#include "xpud/sampling/release_check.h"
#include "xpud/time_boxed_executor.h"

namespace xpud {

struct DeviceState {
  DeviceIdentity identity;
  std::map<std::string, double> metrics;
  bool healthy = true;
  std::string health_reason;
  std::string health_reason_kind;  // xpu::names::reason_kind::*; empty while healthy
  std::optional<std::vector<ProcessUsage>> processes;  // nullopt: not listed this cycle
  // The kernel's view of the card's PCIe link (also in `metrics`, as the kPcie keys), and what
  // pcie_health.h found that does not take the card out: kind -> text.
  PcieLinkState pcie{};
  std::map<std::string, std::string> health_warnings{};
};

struct Snapshot {
  std::uint64_t timestamp_usec = 0;  // wall clock, microseconds since the epoch
  std::uint64_t sequence = 0;        // 1 for the first snapshot
  std::vector<DeviceState> devices;  // ordered by index
  std::string discovery_error;       // last discovery failure; devices are the last known set
  bool driver_stalled = false;  // a driver call hangs: no metrics, health held (driver_stall.h)
  std::string backend;          // Backend::name() when the snapshot was taken
  std::string library_path;     // Backend::library_path() then; empty: no library in use
  std::string driver_version;   // as last read; empty until the driver has told it
};

struct SamplerSettings {
  std::chrono::milliseconds interval{1000};
  std::chrono::milliseconds call_timeout{2000};
  unsigned failure_threshold = 3;
  std::chrono::milliseconds stall_grace{30000};
  std::chrono::milliseconds rescan_interval{60000};  // see DiscoverySchedule
  ReleaseCheckSettings release_check{};              // see ReleaseCheck
  PcieHealthPolicy pcie;                             // [pcie], pcie_health.h
};

class Sampler {
 public:
  // on_snapshot runs on the sampler thread after each new snapshot; keep it short (it just wakes
  // the main loop).
  Sampler(std::shared_ptr<Backend> backend, SamplerSettings settings,
          std::function<void()> on_snapshot);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  void start();
  void stop();

  // Applied from the next cycle on.
  void update_settings(const SamplerSettings& settings);
  // Starts a cycle now instead of at the next tick (e.g. after a simulator injection).
  void request_sample();
  // A driver call from another thread (ConfigureVirtualFunctions): `job` runs on the driver
  // thread, time-boxed like every call, before the next cycle, which then starts at once.
  // `done` gets the executor's verdict on the sampler thread after that cycle's snapshot is in
  // latest() and before on_snapshot, so what the job changed is already discovered. Jobs still
  // queued when the sampler stops get an error.
  void run_driver_job(std::string what, std::function<void()> job,
                      std::function<void(const xpu::Status&)> done);
  // Starts a cycle now that also asks the backend which cards exist (a device event); any thread.
  void request_discovery();
  // A reset of card `uuid` did not cure it ([recovery], xpud/recovery/card_recovery.h): while it
  // stays Unhealthy, its reason is `reason` with kind reset_failed; the first Healthy reading
  // ends that. Starts a cycle now. Any thread.
  void mark_reset_failed(const std::string& uuid, std::string reason);

  std::shared_ptr<const Snapshot> latest() const;
  // Blocks until the first snapshot exists or the timeout passes.
  std::shared_ptr<const Snapshot> wait_first(std::chrono::milliseconds timeout) const;
  // Driver version as last read (with each discovery); empty until the driver has told it.
  std::string driver_version() const;
  // When the sampler last completed a cycle; the watchdog is only fed while this is recent.
  std::chrono::steady_clock::time_point last_cycle() const;
  // True while a driver call that timed out has still not returned.
  bool driver_stuck() const { return executor_.stuck(); }

 private:
  void run();
  std::shared_ptr<const Snapshot> sample_cycle(const SamplerSettings& settings);
  // Refreshes known_devices_ (on failure: keeps them, and says why in the snapshot).
  void discover(Snapshot& snapshot);
  void refresh_driver_version(std::string version);
  // `health` of card `uuid` with a failed reset's mark (mark_reset_failed); sampler thread.
  HealthState with_reset_verdict(const std::string& uuid, HealthState health);

  std::shared_ptr<Backend> backend_;
  std::function<void()> on_snapshot_;
  TimeBoxedExecutor executor_;
  HealthMonitor health_;  // sampler thread only
  PcieHealthJudge pcie_;  // sampler thread only
  DriverStall stall_;     // sampler thread only
  ReleaseCheck release_;  // sampler thread only
  unsigned own_pid_;      // xpud's, never a tenant of a card (release_check.h)
  DiscoverySchedule discovery_;
  std::vector<DeviceIdentity> known_devices_;  // sampler thread only
  std::uint64_t sequence_ = 0;                 // sampler thread only

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  SamplerSettings settings_;
  bool stop_requested_ = false;
  bool sample_requested_ = false;
  struct DriverJob {
    std::string what;
    std::function<void()> job;
    std::function<void(const xpu::Status&)> done;
  };
  std::vector<DriverJob> jobs_;
  std::map<std::string, std::string> reset_failures_;  // uuid -> reason (mark_reset_failed)
  std::shared_ptr<const Snapshot> latest_;
  std::string driver_version_;
  std::atomic<std::chrono::steady_clock::time_point> last_cycle_{};
  std::thread thread_;
};

}  // namespace xpud
