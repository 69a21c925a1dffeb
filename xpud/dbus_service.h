// xpud's objects on the bus: the Manager (with ObjectManager, and Simulator under the sim
// backend) and one object per device. Everything here runs on the main thread, which owns the
// connection; the sampler only hands over snapshots.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <sdbus-c++/IConnection.h>

#include "xpud/sampler.h"

namespace xpud {

class Simulator;
class DriverRequests;
class InstanceRegistry;
class ManagerObject;
class SimulatorObject;
class DeviceObject;

struct ManagerFacts {
  std::string backend;
  std::string library_path;  // Backend::library_path(): the LibraryPath property
  std::string driver_version;
  // Where GetProcesses reads /proc/<pid>/cgroup (the host's /proc; a fake tree in tests).
  std::filesystem::path proc_root = "/proc";
  bool cluster_reconfigure_allowed = false;  // [sriov] allow_cluster_reconfigure
  // Manager.InstanceHook while instances are supported: [cxpu] hook_program and the options
  // that reach this bus.
  std::vector<std::string> instance_hook;
};

class DbusService {
 public:
  // on_injection runs after a successful Simulator call (to sample again at once).
  // driver_requests carries ConfigureVirtualFunctions to the driver, `instances` the cXPU
  // instance methods; both must outlive the service.
  DbusService(sdbus::IConnection& connection, ManagerFacts facts, Simulator* simulator,
              std::function<void()> on_injection, DriverRequests& driver_requests,
              InstanceRegistry& instances);
  ~DbusService();
  DbusService(const DbusService&) = delete;
  DbusService& operator=(const DbusService&) = delete;

  // Brings the object tree and health in line with `snapshot`: devices that appeared or vanished
  // are exported/unexported (InterfacesAdded/Removed); health transitions emit
  // DeviceHealthChanged and PropertiesChanged and are logged with the device in a journal field.
  void publish(std::shared_ptr<const Snapshot> snapshot);

  // After a configuration reload; emits PropertiesChanged when the value changes.
  void set_cluster_reconfigure_allowed(bool allowed);

  unsigned device_count() const;
  unsigned healthy_device_count() const;
  // Devices that are physical functions with their SR-IOV virtual functions on (SriovEnabled).
  unsigned sriov_enabled_count() const;
  const std::string& backend() const { return facts_.backend; }
  bool driver_stalled() const { return snapshot_ && snapshot_->driver_stalled; }

 private:
  friend class ManagerObject;
  sdbus::IConnection& connection_;
  ManagerFacts facts_;
  DriverRequests& driver_requests_;
  InstanceRegistry& instances_;
  std::shared_ptr<const Snapshot> snapshot_;
  std::unique_ptr<ManagerObject> manager_;
  std::unique_ptr<SimulatorObject> simulator_;
  std::map<unsigned, std::unique_ptr<DeviceObject>> devices_;  // by index
};

}  // namespace xpud
