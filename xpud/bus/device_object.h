// One card on the bus (/com/kunlunxin/xpud1/devices/xpu<index>, com.kunlunxin.xpud1.Device): a
// view of the device table's entry, which it only reads. It announces itself with
// InterfacesAdded when made and InterfacesRemoved when dropped.
//
// Threads: the daemon's main thread, which owns the connection and the table.
#pragma once

#include <memory>

#include <sdbus-c++/IConnection.h>

#include "xpud/sampling/device_table.h"

namespace xpud {

class DeviceObject {
 public:
  // The table must hold card `index` now, and outlive the object.
  DeviceObject(sdbus::IConnection& connection, const DeviceTable& table, unsigned index);
  ~DeviceObject();
  DeviceObject(const DeviceObject&) = delete;
  DeviceObject& operator=(const DeviceObject&) = delete;

  // After the table changed the card's health (PropertiesChanged): its reason always, Health and
  // HealthTransitions too when `flipped` (Healthy <-> Unhealthy).
  void health_changed(bool flipped);
  // After the table changed the card's PCIe figures or health warnings (PropertiesChanged of
  // those properties).
  void pcie_changed();
  // After CardRecovery counted a reset of the card (PropertiesChanged of Resets).
  void resets_changed();

 private:
  class Adaptor;
  std::unique_ptr<Adaptor> adaptor_;
};

}  // namespace xpud
