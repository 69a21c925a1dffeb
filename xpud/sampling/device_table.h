// The cards as xpud publishes them, carried from one snapshot to the next: which cards are
// present, their health, how often each became Healthy or Unhealthy, and the manager's facts that
// a snapshot can move (driver version, backend, library). apply() takes the sampler's next
// snapshot, writes the journal's device events (added, removed, health) and says what changed;
// the bus objects only read the table and tell their clients (bus/dbus_service.h).
//
// The transitions are counted here, where a change becomes visible, rather than by the monitor, so
// a client that restarts (the exporter) still sees a flap that happened while it was away.
//
// Threads: the daemon's main thread only (it applies the sampler's snapshots in order).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "xpud/device.h"
#include "xpud/sampling/sampler.h"

namespace xpud {

// One card as the bus shows it.
struct PublishedDevice {
  DeviceIdentity identity;
  bool healthy = true;
  std::string health_reason;
  std::string health_reason_kind;  // xpu::names::reason_kind::*; empty while healthy
  std::uint64_t became_healthy = 0;
  std::uint64_t became_unhealthy = 0;
  // The kernel's view of the card's PCIe link, as last read (kept while the driver is stalled),
  // and the warnings that leave the card Healthy (pcie_health.h): kind -> text.
  PcieLinkState pcie{};
  std::map<std::string, std::string> health_warnings{};
  // What became of the card's resets (xpu::names::reset_result::* -> count): counted by
  // CardRecovery, kept here with the card so that they go when it goes.
  std::map<std::string, std::uint64_t> resets{};
};

// One card's change, for the bus to tell.
struct CardChange {
  enum class Kind {
    kAdded,   // a new object (a hot-swapped card's successor too)
    kHealth,  // Healthy <-> Unhealthy (with its reason)
    kReason,  // the reason alone
    kPcie,    // the PCIe figures or the health warnings (beside any health change)
  };
  unsigned index = 0;
  Kind kind = Kind::kAdded;
};

// What one snapshot changed, in the order the bus tells it: removals first (so a hot-swapped card
// is removed before its successor is added), then the cards' changes by ascending index.
struct DeviceTableChanges {
  // Vanished, or replaced by a different card at the same index (hot swap).
  std::vector<DeviceIdentity> removed;
  std::vector<CardChange> cards;
  // Manager properties whose value changed.
  bool device_count = false;
  bool healthy_device_count = false;
  bool driver_stalled = false;
  bool driver_version = false;
  bool backend = false;
  bool library_path = false;
};

// The manager's facts before the first snapshot: as the backend and the sampler tell them.
struct ManagerModel {
  std::string backend;
  std::string library_path;  // Backend::library_path(): the LibraryPath property
  std::string driver_version;
};

class DeviceTable {
 public:
  explicit DeviceTable(ManagerModel manager) : manager_(std::move(manager)) {}

  // Brings the table in line with `snapshot` and says what changed.
  DeviceTableChanges apply(std::shared_ptr<const Snapshot> snapshot);

  const std::map<unsigned, PublishedDevice>& devices() const { return devices_; }  // by index
  // The card at `index`; nullptr when there is none.
  const PublishedDevice* find(unsigned index) const;
  // The latest snapshot applied; null before the first.
  const std::shared_ptr<const Snapshot>& snapshot() const { return snapshot_; }
  const ManagerModel& manager() const { return manager_; }

  unsigned device_count() const { return static_cast<unsigned>(devices_.size()); }
  unsigned healthy_device_count() const;
  // Devices that are physical functions with their SR-IOV virtual functions on (SriovEnabled).
  unsigned sriov_enabled_count() const;
  bool driver_stalled() const { return snapshot_ && snapshot_->driver_stalled; }
  // Counts one reset of card `uuid` as `result` (xpu::names::reset_result::*); the card's
  // index when it is in the table (its Resets changed), nullopt when it is not.
  std::optional<unsigned> count_reset(const std::string& uuid, std::string_view result);

 private:
  ManagerModel manager_;
  std::shared_ptr<const Snapshot> snapshot_;
  std::map<unsigned, PublishedDevice> devices_;
};

}  // namespace xpud
