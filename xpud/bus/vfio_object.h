// com.kunlunxin.xpud1.Vfio on the manager's path: the Kunlunxin functions on vfio-pci (for
// virtual machines) and the root-only Bind and Unbind that move a function there and back
// (xpud/backends/vfio/vfio_binding.h). The moves run as driver requests, on the driver thread,
// time-boxed like every driver call and followed by a discovery, so the card's device object
// is gone (or back) when the caller gets the reply.
//
// Threads: the daemon's main thread, which owns the connection, the table and the list.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include <sdbus-c++/IConnection.h>

#include "xpud/backends/vfio/vfio_functions.h"
#include "xpud/sampling/device_table.h"

namespace xpud {

class DriverRequests;
class InstanceRegistry;

class VfioObject {
 public:
  // `root` is [sysfs] root ("/" on a host). The table, the requests and the instances must
  // outlive the object. `on_change` runs (main thread) whenever the list changes, with the new
  // list: the CDI spec of the VFIO functions follows it.
  VfioObject(sdbus::IConnection& connection, const DeviceTable& table, std::filesystem::path root,
             DriverRequests& driver_requests, const InstanceRegistry& instances,
             std::function<void(const std::vector<vfio::VfioFunction>&)> on_change);
  ~VfioObject();
  VfioObject(const VfioObject&) = delete;
  VfioObject& operator=(const VfioObject&) = delete;

  // Reads the list again from sysfs; PropertiesChanged and on_change when it changed. Called at
  // start, after each move, and when the Manager's set of cards changes.
  void refresh();
  const std::vector<vfio::VfioFunction>& functions() const;

 private:
  class Adaptor;
  std::unique_ptr<Adaptor> adaptor_;
};

}  // namespace xpud
