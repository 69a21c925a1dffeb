#include "xpud/bus/dbus_service.h"

#include <string>
#include <vector>

#include <sdbus-c++/Error.h>
#include <spdlog/spdlog.h>

#include "common/names.h"
#include "xpud/bus/device_object.h"
#include "xpud/bus/simulator_object.h"

namespace xpud {

namespace names = xpu::names;

DbusService::DbusService(sdbus::IConnection& connection, const DeviceTable& table,
                         ManagerFacts facts, Simulator* simulator,
                         std::function<void()> on_injection, DriverRequests& driver_requests,
                         InstanceRegistry& instances, CardRecovery& recovery)
    : connection_(connection), table_(table) {
  manager_ = std::make_unique<ManagerObject>(connection_, table_, std::move(facts), driver_requests,
                                             instances, recovery);
  if (simulator != nullptr)
    simulator_ =
        std::make_unique<SimulatorObject>(connection_, *simulator, std::move(on_injection));
}

DbusService::~DbusService() {
  devices_.clear();
  simulator_.reset();
  manager_.reset();
}

void DbusService::set_cluster_reconfigure_allowed(bool allowed) {
  manager_->set_cluster_reconfigure_allowed(allowed);
}

void DbusService::resets_changed(unsigned index) {
  auto object = devices_.find(index);
  if (object == devices_.end()) return;
  try {
    object->second->resets_changed();
  } catch (const sdbus::Error& e) {
    // The counters are in the table either way; a client reads them at its next Get.
    spdlog::warn("PropertiesChanged for {}'s Resets not sent: {}", names::device_name(index),
                 e.getMessage());
  }
}

void DbusService::publish(const DeviceTableChanges& changes) {
  // A hot-swapped card's old object goes before its successor comes.
  for (const auto& card : changes.removed) devices_.erase(card.index);

  for (const auto& card : changes.cards) {
    const PublishedDevice* device = table_.find(card.index);
    if (device == nullptr) continue;
    auto object = devices_.find(card.index);
    // A card whose object a failed publish left unmade (the bus refused a signal) is made now.
    if (card.kind == CardChange::Kind::kAdded || object == devices_.end()) {
      devices_.insert_or_assign(card.index,
                                std::make_unique<DeviceObject>(connection_, table_, card.index));
      // A card that comes unhealthy is a change of health for a client that watches signals.
      if (!device->healthy) manager_->device_health_changed(card.index);
      continue;
    }
    if (card.kind == CardChange::Kind::kPcie) {
      object->second->pcie_changed();
      continue;
    }
    object->second->health_changed(card.kind == CardChange::Kind::kHealth);
    manager_->device_health_changed(card.index);
  }

  std::vector<std::string> changed;
  if (changes.driver_version) changed.emplace_back(names::property::kDriverVersion);
  if (changes.device_count) changed.emplace_back(names::property::kDeviceCount);
  if (changes.healthy_device_count) changed.emplace_back(names::property::kHealthyDeviceCount);
  if (changes.driver_stalled) changed.emplace_back(names::property::kDriverStalled);
  // backend=auto moving from sysfs to xpuml (auto_backend.h): what instances can do moves with it.
  if (changes.backend)
    changed.insert(changed.end(), {std::string(names::property::kBackend),
                                   std::string(names::property::kInstancesSupported),
                                   std::string(names::property::kInstanceHook),
                                   std::string(names::property::kShareInstancesSupported)});
  if (changes.library_path) changed.emplace_back(names::property::kLibraryPath);
  if (!changed.empty()) manager_->properties_changed(changed);
}

}  // namespace xpud
