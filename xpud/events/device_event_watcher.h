// Watches for device events on a thread of its own and calls back for each one that concerns an
// XPU. Optional by design: where no event source can be had (no netlink in a container, a
// sandbox), it says so once and xpud relies on the rescan.
#pragma once

#include <functional>
#include <memory>
#include <thread>

#include "common/unique_fd.h"
#include "xpud/events/device_event_source.h"

namespace xpud {

class DeviceEventWatcher {
 public:
  // udev's monitor, or the test hook's socket when XPUD_TEST_DEVICE_EVENTS is set. nullptr
  // (after a warning naming the reason and `fallback`, what xpud does instead) when neither can
  // be opened. on_xpu_event runs on the watcher's thread.
  static std::unique_ptr<DeviceEventWatcher> start(
      std::function<void(const DeviceEvent&)> on_xpu_event, const std::string& fallback);

  // Watches `source`, which delivers to the sink it was made with (make_filtered_sink's, from
  // start()).
  explicit DeviceEventWatcher(std::unique_ptr<DeviceEventSource> source);
  ~DeviceEventWatcher();
  DeviceEventWatcher(const DeviceEventWatcher&) = delete;
  DeviceEventWatcher& operator=(const DeviceEventWatcher&) = delete;

 private:
  void run();

  std::unique_ptr<DeviceEventSource> source_;
  xpu::UniqueFd stop_;
  std::thread thread_;
};

// The sink every source delivers to: logs each event at debug level and passes on those that
// concern an XPU.
DeviceEventSink make_filtered_sink(std::function<void(const DeviceEvent&)> on_xpu_event);

}  // namespace xpud
