// Turns readings into health. Pure logic, owned by the sampler thread.
//
//  - a driver-reported fault makes a card Unhealthy at once, with the driver's reason;
//  - a failed read is noise until `failure_threshold` of them in a row, then Unhealthy;
//  - one clean reading (no fault, no error) makes the card Healthy again, whatever came before:
//    a card that recovers must never stay stuck Unhealthy.
// The reason names the cause and changes only when the cause changes in kind: no failure count,
// and a duration in the cause ("has not returned after 1200 ms") does not make it new. Every
// change of reason is a PropertiesChanged, a DeviceHealthChanged and a journal line on every
// node client, so a card that keeps failing must not produce one per sampling cycle; counts and
// timings are in the sampler's debug log.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "xpud/device.h"

namespace xpud {

// What decides whether two reasons are the same cause: the text without its durations
// ("<digits> ms").
std::string reason_kind(std::string_view reason);

struct HealthState {
  bool healthy = true;
  std::string reason;            // empty while healthy; the cause's text as first seen in this kind
  std::string_view reason_kind;  // xpu::names::reason_kind::*; empty while healthy
  unsigned consecutive_failures = 0;
};

class HealthMonitor {
 public:
  explicit HealthMonitor(unsigned failure_threshold) : failure_threshold_(failure_threshold) {}
  void set_failure_threshold(unsigned threshold) { failure_threshold_ = threshold; }

  // Cards are keyed by UUID, which survives index changes across hot-plug.
  const HealthState& update(const std::string& uuid, const DeviceReading& reading);
  // After update(): a cause found beside the driver's reading (the kernel's PCIe counters:
  // pcie_health.h) makes a card that update() left Healthy Unhealthy with `reason` and `kind`.
  // A card already Unhealthy keeps its reason: the driver's own fault says more. Kept like any
  // other reason (the next clean update() clears it, so the finding must be given every cycle
  // it holds).
  const HealthState& add_finding(const std::string& uuid, std::string reason,
                                 std::string_view kind);
  void forget(const std::string& uuid) { states_.erase(uuid); }
  // The card's current health without a new reading (Healthy for a card never read).
  HealthState current(const std::string& uuid) const {
    auto it = states_.find(uuid);
    return it == states_.end() ? HealthState{} : it->second;
  }

 private:
  unsigned failure_threshold_;
  std::map<std::string, HealthState> states_;
};

}  // namespace xpud
