// backend = auto. Picks xpuml when libxpuml loads and initialises, sysfs when the library is
// missing or unusable. The case in between, a library that loads but cannot initialise yet
// (udev loaded the kunlun module after xpud started: xpumlInit returns DRIVER_NOT_LOADED), would
// otherwise leave the host on sysfs, without metrics, until someone restarts xpud. So then the
// backend serves from sysfs while a thread of its own retries the library with back-off, and
// moves to xpuml at the next discovery after an attempt succeeds.
//
// Every xpumlInit runs on a driver thread of its own and is waited for at most call_timeout_ms
// (it may hang on a half-loaded driver); an attempt that returns later still counts, and until
// it returns the next attempts are skipped.
//
// Cards keep their ids across the switch: both backends derive the same ids (device_uuid.h),
// and when the library reports its own UUID for a card already published under the sysfs id, the
// card keeps the sysfs id until xpud restarts (a running pod holds its card by that id).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/result.h"
#include "xpud/backends/backend.h"
#include "xpud/backends/cxpu_instances.h"
#include "xpud/backends/topology_quirks.h"
#include "xpud/config.h"
#include "xpud/time_boxed_executor.h"

namespace xpud {

// Waits between attempts: `first`, doubling up to `longest`.
struct RetryBackoff {
  std::chrono::milliseconds first{1000};
  std::chrono::milliseconds longest{60000};
};

// The backend for `backend = auto`, as described above.
// Both backends it builds take their LinkedDevices from `links` (topology_links.h).
xpu::Result<std::unique_ptr<Backend>> make_auto_backend(
    const Config& config, RetryBackoff backoff = {},
    const std::shared_ptr<const topology::LinkTable>& links = nullptr);

// cXPU instances only once on xpuml (the sysfs fallback has no library to make them).
class AutoBackend final : public Backend, public CxpuInstanceControl {
 public:
  // Opens the library and initialises it; sets `init_failed` when only xpumlInit failed.
  using Opener = std::function<xpu::Result<std::unique_ptr<Backend>>(bool* init_failed)>;

  // What attempts report, shared with the driver thread (an attempt may outlive the backend).
  struct Attempts {
    std::mutex mutex;
    std::unique_ptr<Backend> ready;  // initialised, not yet adopted
    std::string error;               // why the last attempt failed
    bool init_failed = false;        // ...and whether the library itself was fine
    bool closed = false;             // the AutoBackend is gone: drop what comes
  };

  // `fallback` serves until an attempt succeeds; `executor` runs the attempts (the first one,
  // the factory's, may still be running on it), `attempts` is where they report.
  AutoBackend(std::unique_ptr<Backend> fallback, Opener open,
              std::unique_ptr<TimeBoxedExecutor> executor, std::shared_ptr<Attempts> attempts,
              std::string reason, RetryBackoff backoff);
  ~AutoBackend() override;

  // One attempt on `executor`: true when it returned in time (its outcome is in `attempts`);
  // false with `why` when it did not (it reports to `attempts` if it ever returns).
  static bool attempt(TimeBoxedExecutor& executor, const Opener& open,
                      const std::shared_ptr<Attempts>& attempts, std::string& why);

  std::string_view name() const override;
  std::string library_path() const override;
  std::string driver_version() override;
  xpu::Result<std::vector<DeviceIdentity>> discover() override;
  DeviceReading read(const DeviceIdentity& device) override;
  CxpuInstanceControl* cxpu_instances() override;
  std::optional<DriverChangeError> create_instance(const DeviceIdentity& device,
                                                   const std::string& id,
                                                   std::uint64_t memory_limit_bytes) override;
  std::optional<DriverChangeError> set_instance_memory_limit(
      const DeviceIdentity& device, const std::string& id,
      std::uint64_t memory_limit_bytes) override;
  std::optional<DriverChangeError> destroy_instance(const DeviceIdentity& device,
                                                    const std::string& id) override;

 private:
  // `device` with the id the library gave the card, where it keeps the one published first.
  DeviceIdentity as_the_library_knows_it(const DeviceIdentity& device) const;
  void retry_loop();
  Backend& active() { return upgraded_ ? *upgraded_ : *fallback_; }

  std::unique_ptr<Backend> fallback_;
  Opener open_;
  std::shared_ptr<Attempts> attempts_;
  std::string reason_;
  const RetryBackoff backoff_;

  // Driver thread only (discover/read).
  std::unique_ptr<Backend> upgraded_;
  std::map<std::string, std::string> published_uuid_by_card_;  // from the last sysfs discovery
  std::map<std::string, std::string> library_uuid_;            // published id -> library's id

  std::atomic<bool> switched_{false};  // name() may be asked from any thread

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread retry_thread_;
  // Destroyed before the members above; never joins an xpumlInit that hangs.
  std::unique_ptr<TimeBoxedExecutor> executor_;
};

}  // namespace xpud
