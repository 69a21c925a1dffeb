// Where device events come from: udev's monitor in production (uevent_monitor.h), a socket in
// tests (injected_device_events.h). Both hand over the same DeviceEvent, so everything after
// the source (the XPU filter, the discovery it triggers) is the same code in tests.
#pragma once

#include <functional>
#include <string>

#include "common/result.h"
#include "xpud/events/device_event.h"

namespace xpud {

using DeviceEventSink = std::function<void(const DeviceEvent&)>;

class DeviceEventSource {
 public:
  virtual ~DeviceEventSource() = default;
  DeviceEventSource() = default;
  DeviceEventSource(const DeviceEventSource&) = delete;
  DeviceEventSource& operator=(const DeviceEventSource&) = delete;

  // For the log: what is listened to.
  virtual std::string description() const = 0;
  // Readable (POLLIN) when events wait.
  virtual int fd() const = 0;
  // Takes every waiting event and passes each to the sink given at creation, unfiltered. An
  // error means the source is broken for good.
  virtual xpu::Status dispatch() = 0;
};

}  // namespace xpud
