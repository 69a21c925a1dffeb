// The Manager (/com/kunlunxin/xpud1, com.kunlunxin.xpud1.Manager with ObjectManager): the
// manager's properties and the cards' metrics and processes, read from the device table; the
// methods that change a card (SR-IOV virtual functions, cXPU instances), handed to the driver
// requests and the instance registry, and ResetDevice, handed to the card recovery; and the
// DeviceHealthChanged signal.
//
// Threads: the daemon's main thread, which owns the connection and the table.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <sdbus-c++/IConnection.h>

#include "xpud/sampling/device_table.h"

namespace xpud {

class CardRecovery;
class DriverRequests;
class InstanceRegistry;

// What the Manager tells that no snapshot changes: the daemon's settings.
struct ManagerFacts {
  // Where GetProcesses reads /proc/<pid>/cgroup (the host's /proc; a fake tree in tests).
  std::filesystem::path proc_root = "/proc";
  bool cluster_reconfigure_allowed = false;  // [sriov] allow_cluster_reconfigure
  // Manager.InstanceHook while instances are supported: [cxpu] hook_program and the options
  // that reach this bus.
  std::vector<std::string> instance_hook;
};

class ManagerObject {
 public:
  // The table, driver_requests (ConfigureVirtualFunctions), `instances` (the cXPU instance
  // methods) and `recovery` (ResetDevice) must outlive the object.
  ManagerObject(sdbus::IConnection& connection, const DeviceTable& table, ManagerFacts facts,
                DriverRequests& driver_requests, InstanceRegistry& instances,
                CardRecovery& recovery);
  ~ManagerObject();
  ManagerObject(const ManagerObject&) = delete;
  ManagerObject& operator=(const ManagerObject&) = delete;

  // After a configuration reload; emits PropertiesChanged when the value changes.
  void set_cluster_reconfigure_allowed(bool allowed);
  // DeviceHealthChanged for card `index`, as the table has it now.
  void device_health_changed(unsigned index);
  // PropertiesChanged on the Manager interface.
  void properties_changed(const std::vector<std::string>& properties);

 private:
  class Adaptor;
  std::unique_ptr<Adaptor> adaptor_;
};

}  // namespace xpud
