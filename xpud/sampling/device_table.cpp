#include "xpud/sampling/device_table.h"

#include <spdlog/spdlog.h>

#include "common/logging.h"
#include "common/names.h"

namespace xpud {

namespace names = xpu::names;

namespace {

// The journal's words for a warning that comes or changes ("health warning (kind): text"), and
// for one that goes (empty text).
std::string warning_event(const std::string& kind, const std::string& text) {
  return "health warning (" + kind + (text.empty() ? ") gone" : "): " + text);
}

// Takes the snapshot's PCIe figures and warnings; logs each warning that comes, changes or goes.
// True when anything the bus shows changed.
bool apply_pcie(const std::string& name, const DeviceState& state, PublishedDevice& device) {
  if (state.pcie == device.pcie && state.health_warnings == device.health_warnings) return false;
  for (const auto& [kind, text] : state.health_warnings) {
    auto was = device.health_warnings.find(kind);
    if (was == device.health_warnings.end() || was->second != text)
      xpu::log_device_event(spdlog::level::warn, name, state.identity.uuid,
                            warning_event(kind, text));
  }
  for (const auto& [kind, text] : device.health_warnings)
    if (!state.health_warnings.contains(kind))
      xpu::log_device_event(spdlog::level::info, name, state.identity.uuid,
                            warning_event(kind, ""));
  device.pcie = state.pcie;
  device.health_warnings = state.health_warnings;
  return true;
}

}  // namespace

const PublishedDevice* DeviceTable::find(unsigned index) const {
  auto it = devices_.find(index);
  return it == devices_.end() ? nullptr : &it->second;
}

unsigned DeviceTable::healthy_device_count() const {
  unsigned healthy = 0;
  for (const auto& [index, device] : devices_) healthy += device.healthy ? 1 : 0;
  return healthy;
}

unsigned DeviceTable::sriov_enabled_count() const {
  unsigned count = 0;
  for (const auto& [index, device] : devices_) count += device.identity.sriov_enabled ? 1 : 0;
  return count;
}

std::optional<unsigned> DeviceTable::count_reset(const std::string& uuid, std::string_view result) {
  for (auto& [index, device] : devices_) {
    if (device.identity.uuid != uuid) continue;
    ++device.resets[std::string(result)];
    return index;
  }
  return std::nullopt;
}

DeviceTableChanges DeviceTable::apply(std::shared_ptr<const Snapshot> snapshot) {
  DeviceTableChanges changes;
  const unsigned old_count = device_count();
  const unsigned old_healthy = healthy_device_count();
  const bool old_stalled = driver_stalled();
  snapshot_ = std::move(snapshot);

  std::map<unsigned, const DeviceState*> present;
  for (const auto& device : snapshot_->devices) present[device.identity.index] = &device;

  // Vanished, or a different card at the same index (hot swap): the old card goes first.
  for (auto it = devices_.begin(); it != devices_.end();) {
    auto now = present.find(it->first);
    if (now == present.end() || now->second->identity != it->second.identity) {
      const auto& identity = it->second.identity;
      xpu::log_device_event(spdlog::level::warn, names::device_name(identity.index), identity.uuid,
                            "device removed");
      changes.removed.push_back(identity);
      it = devices_.erase(it);
    } else {
      ++it;
    }
  }

  for (const auto& [index, state] : present) {
    const std::string name = names::device_name(index);
    auto it = devices_.find(index);
    if (it == devices_.end()) {
      devices_.emplace(index, PublishedDevice{state->identity,
                                              state->healthy,
                                              state->health_reason,
                                              state->health_reason_kind,
                                              0,
                                              0,
                                              state->pcie,
                                              state->health_warnings,
                                              {}});
      changes.cards.push_back({index, CardChange::Kind::kAdded});
      xpu::log_device_event(
          spdlog::level::info, name, state->identity.uuid,
          "device added: " + state->identity.model + " at " + state->identity.pci_bus_id + ", " +
              (state->healthy ? "Healthy" : "Unhealthy: " + state->health_reason));
      for (const auto& [kind, text] : state->health_warnings)
        xpu::log_device_event(spdlog::level::warn, name, state->identity.uuid,
                              warning_event(kind, text));
      continue;
    }
    PublishedDevice& device = it->second;
    // A stalled driver read nothing: the last figures stand until the cards are read again.
    if (!snapshot_->driver_stalled && apply_pcie(name, *state, device))
      changes.cards.push_back({index, CardChange::Kind::kPcie});
    if (state->healthy == device.healthy && state->health_reason == device.health_reason) continue;
    const bool flipped = state->healthy != device.healthy;
    if (flipped) ++(state->healthy ? device.became_healthy : device.became_unhealthy);
    device.healthy = state->healthy;
    device.health_reason = state->health_reason;
    device.health_reason_kind = state->health_reason_kind;
    changes.cards.push_back(
        {index, flipped ? CardChange::Kind::kHealth : CardChange::Kind::kReason});
    if (state->healthy) {
      xpu::log_device_event(spdlog::level::info, name, state->identity.uuid,
                            "health: Healthy again");
    } else {
      xpu::log_device_event(spdlog::level::warn, name, state->identity.uuid,
                            "health: Unhealthy: " + state->health_reason);
    }
  }

  if (snapshot_->driver_version != manager_.driver_version) {
    manager_.driver_version = snapshot_->driver_version;
    changes.driver_version = true;
  }
  changes.device_count = device_count() != old_count;
  changes.healthy_device_count = healthy_device_count() != old_healthy;
  changes.driver_stalled = driver_stalled() != old_stalled;
  // backend=auto moving from sysfs to xpuml (auto_backend.h).
  if (!snapshot_->backend.empty() && snapshot_->backend != manager_.backend) {
    spdlog::info("backend is now {} (was {})", snapshot_->backend, manager_.backend);
    manager_.backend = snapshot_->backend;
    changes.backend = true;
  }
  if (!snapshot_->backend.empty() && snapshot_->library_path != manager_.library_path) {
    spdlog::info("libxpuml in use: {}",
                 snapshot_->library_path.empty() ? "none" : snapshot_->library_path);
    manager_.library_path = snapshot_->library_path;
    changes.library_path = true;
  }
  return changes;
}

}  // namespace xpud
