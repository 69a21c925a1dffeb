// The check of a card its tenant has left: with no process on it, a card's used memory must come
// back to its idle level within a bound, or the card is Unhealthy ("memory not released") until a
// reading shows it back down. A job that crashed or was killed can leave memory behind on the
// card (or the card wedged holding it), and the next pod would get a card that cannot hold its
// work; nothing else in xpud would notice, since the driver still reports the card RUNNING.
//
// What the card reports (docs/hardware.md): the card's used global memory
// (xpumlMemory_t.usedGlobalMemory) apart from its process list
// (xpumlDeviceGetComputeRunningProcesses); an idle card reports 0 bytes used (go-xpuml's README,
// a 4-chip K200 with nothing running). The same sample lists one process on every chip, with 0
// bytes: the sample's own pid, which opened the cards through the library. So the process that
// reads the cards can itself be on the list, and xpud does not count its own pid as a tenant.
//
// The idle level is a configured allowance (idle_memory_mib), not a level learned from the card:
// a level learned while no process was seen would take a leak as the norm whenever xpud starts
// (or restarts) after the crash that left it, which is when the check matters most. For the same
// reason the clock starts at the first reading with no process and memory above the level, not
// only when xpud saw a process leave.
//
// The state half of "checked" is the driver's, read on every reading: a card the driver reports
// in ERROR, IN_EXCEPTION or IN_RESET is Unhealthy "driver_fault" at once (health_monitor.h),
// which takes precedence over this check's reason.
//
// Not judged: a card whose readings do not tell both (the sysfs backend reads neither), and a
// physical function with SR-IOV on, which serves no pod and whose memory report with its virtual
// functions on no public source describes.
//
// Pure logic, owned by the sampler thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "xpud/device.h"
#include "xpud/sampling/health_monitor.h"

namespace xpud {

struct ReleaseCheckSettings {
  bool enabled = true;
  // How long memory may stay above the idle level with no process before the card is Unhealthy:
  // room for a process's teardown and for the sampling interval, short against the time a
  // scheduler takes to place the next pod on the card.
  std::chrono::milliseconds timeout{30000};
  // Used memory at or below this counts as idle.
  std::uint64_t idle_memory_bytes = 256ull << 20;

  bool operator==(const ReleaseCheckSettings&) const = default;
};

// What one reading says that the check needs.
struct ReleaseObservation {
  bool judged = true;               // false: the card is never checked (a PF with SR-IOV on)
  std::optional<unsigned> tenants;  // processes on the card other than xpud; nullopt: unknown
  std::optional<std::uint64_t> memory_used_bytes;  // nullopt: not read this time
};

// The observation of `reading` of `card`: the tenants from the process list without `own_pid`
// (xpud's own), else from the process_count metric (which cannot tell xpud apart: a count of 0
// is none, a count above 0 keeps the check waiting), the memory from memory_used_bytes.
ReleaseObservation release_observation(const DeviceIdentity& card, const DeviceReading& reading,
                                       unsigned own_pid);

class ReleaseCheck {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ReleaseCheck(ReleaseCheckSettings settings) : settings_(settings) {}
  // Turned off, it forgets every card. Otherwise a card keeps its verdict and its wait: a new
  // level is applied at the next reading (memory at or below it passes), a new bound to the wait
  // under way, so a reload does not flap a failed card Healthy and back.
  void set_settings(const ReleaseCheckSettings& settings);

  // Judges one reading of the card `uuid` taken at `now`; the reason the card fails the check,
  // nullopt while it does not. The reason keeps its first text while the card fails, so it
  // changes (a signal, a journal line) only when the verdict does.
  std::optional<std::string> observe(const std::string& uuid, const ReleaseObservation& seen,
                                     Clock::time_point now);
  // The verdict without a new reading (nullopt for a card never judged).
  std::optional<std::string> current(const std::string& uuid) const;
  void forget(const std::string& uuid) { cards_.erase(uuid); }

 private:
  struct CardState {
    bool had_tenant = false;                      // a process was seen on the card
    std::optional<Clock::time_point> idle_since;  // no process and memory above idle since
    std::optional<std::string> failure;
  };

  ReleaseCheckSettings settings_;
  std::map<std::string, CardState> cards_;
};

// `health` (the HealthMonitor's verdict) with the check's `failure` added: the monitor's cause
// wins, since a driver fault or failing reads say more about the card than its memory does.
HealthState with_release_verdict(HealthState health, const std::optional<std::string>& failure);

}  // namespace xpud
