// The one interface between xpud and a driver. xpuml, sysfs and sim implement it; nothing above
// it knows which one runs.
//
// Threading: discover() and read() are only called from the sampler's driver thread, one call at
// a time, and may block (the sampler time-boxes them). driver_version() is called once after
// creation, from the same thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "xpud/device.h"

namespace xpud {

class CxpuInstanceControl;
class VirtualFunctionControl;

class Backend {
 public:
  virtual ~Backend() = default;
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // "xpuml", "sysfs" or "sim".
  virtual std::string_view name() const = 0;
  // The management library file the backend runs on (the Manager's LibraryPath); empty when it
  // uses none. Any thread may ask.
  virtual std::string library_path() const { return {}; }
  // Driver version as the backend can tell it; empty when unknown.
  virtual std::string driver_version() = 0;
  // The cards present now, ordered by index. Called at start, after a device event, after a
  // read that says a card is gone and on the safety rescan (DiscoverySchedule), to notice
  // hot-plug and VF changes, so it must report identities consistently from call to call.
  virtual xpu::Result<std::vector<DeviceIdentity>> discover() = 0;
  // Samples one card previously returned by discover().
  virtual DeviceReading read(const DeviceIdentity& device) = 0;
  // SR-IOV control (virtual_functions.h); nullptr when the backend cannot change VF counts.
  virtual VirtualFunctionControl* virtual_functions() { return nullptr; }
  // cXPU instances (cxpu_instances.h); nullptr when the backend cannot make them. Any thread
  // may ask; the calls themselves run on the driver thread.
  virtual CxpuInstanceControl* cxpu_instances() { return nullptr; }
};

}  // namespace xpud
