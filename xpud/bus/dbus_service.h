// xpud's objects on the bus: the Manager (with ObjectManager, and Simulator under the sim
// backend) and one object per device. The objects only read the model (the device table);
// publish() brings the object tree in line with what the table says changed. Everything here runs
// on the main thread, which owns the connection and the table; the sampler only hands over
// snapshots.
#pragma once

#include <functional>
#include <map>
#include <memory>

#include <sdbus-c++/IConnection.h>

#include "xpud/bus/manager_object.h"
#include "xpud/sampling/device_table.h"

namespace xpud {

class Simulator;
class CardRecovery;
class DriverRequests;
class InstanceRegistry;
class SimulatorObject;
class DeviceObject;

class DbusService {
 public:
  // on_injection runs after a successful Simulator call (to sample again at once).
  // driver_requests carries ConfigureVirtualFunctions to the driver, `instances` the cXPU
  // instance methods; they and the table must outlive the service.
  DbusService(sdbus::IConnection& connection, const DeviceTable& table, ManagerFacts facts,
              Simulator* simulator, std::function<void()> on_injection,
              DriverRequests& driver_requests, InstanceRegistry& instances, CardRecovery& recovery);
  ~DbusService();
  DbusService(const DbusService&) = delete;
  DbusService& operator=(const DbusService&) = delete;

  // Tells the bus what the table's last apply() changed: devices that appeared or vanished are
  // exported/unexported (InterfacesAdded/Removed); health changes emit DeviceHealthChanged and
  // PropertiesChanged, as do the Manager's properties that moved.
  void publish(const DeviceTableChanges& changes);

  // PropertiesChanged for card `index`'s Resets, which CardRecovery counted in the table.
  void resets_changed(unsigned index);

  // After a configuration reload; emits PropertiesChanged when the value changes.
  void set_cluster_reconfigure_allowed(bool allowed);

 private:
  sdbus::IConnection& connection_;
  const DeviceTable& table_;
  std::unique_ptr<ManagerObject> manager_;
  std::unique_ptr<SimulatorObject> simulator_;
  std::map<unsigned, std::unique_ptr<DeviceObject>> devices_;  // by index
};

}  // namespace xpud
