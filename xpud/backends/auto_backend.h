// backend = auto on a host whose libxpuml loads but cannot initialise yet, typically because udev
// loads the kunlun module after xpud started (xpumlInit: DRIVER_NOT_LOADED). Settling for sysfs
// for the life of the process would leave the host without metrics until someone restarts xpud,
// so this backend serves from sysfs while a thread of its own retries the library (each attempt
// time-boxed, since xpumlInit may hang on a half-loaded driver) with back-off, and switches to
// xpuml at the next discovery after an attempt succeeds.
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
#include "xpud/time_boxed_executor.h"

namespace xpud {

// Waits between attempts: `first`, doubling up to `longest`.
struct RetryBackoff {
  std::chrono::milliseconds first{1000};
  std::chrono::milliseconds longest{60000};
};

class AutoBackend final : public Backend {
 public:
  // Opens the library and initialises it; runs on the retry thread, time-boxed.
  using Opener = std::function<xpu::Result<std::unique_ptr<Backend>>()>;

  // `fallback` serves until `open` succeeds; `reason` is why the first attempt failed.
  AutoBackend(std::unique_ptr<Backend> fallback, Opener open, std::string reason,
              std::chrono::milliseconds attempt_timeout, RetryBackoff backoff = {});
  ~AutoBackend() override;

  std::string_view name() const override;
  std::string driver_version() override;
  xpu::Result<std::vector<DeviceIdentity>> discover() override;
  DeviceReading read(const DeviceIdentity& device) override;

 private:
  void retry_loop();
  Backend& active() { return upgraded_ ? *upgraded_ : *fallback_; }

  std::unique_ptr<Backend> fallback_;
  Opener open_;
  std::string reason_;
  const RetryBackoff backoff_;

  // Driver thread only (discover/read).
  std::shared_ptr<Backend> upgraded_;
  std::map<std::string, std::string> published_uuid_by_bus_and_index_;  // from sysfs
  std::map<std::string, std::string> library_uuid_;  // published id -> the library's id

  std::atomic<bool> switched_{false};  // name() may be asked from any thread

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::shared_ptr<Backend> ready_;  // opened by the retry thread, not yet adopted
  std::thread retry_thread_;
  TimeBoxedExecutor executor_;  // declared last: destroyed first, never joins a hung xpumlInit
};

}  // namespace xpud
