// Resetting a card without a human, guarded ([recovery] in xpud.conf): the root-only ResetDevice
// and, with `auto = true`, a card Unhealthy for `unhealthy_for_ms` with no user. One object owns
// every decision about resets: the guards, the per-card budget (reset_budget.h), the resets under
// way and the check of each reset card; the outcomes go to the journal (one line per step, with
// the card's XPU_DEVICE), to the Device's Resets counters (DeviceTable::count_reset) and, for a
// card the reset did not cure, to its health (Sampler::mark_reset_failed: HealthReasonKind
// reset_failed until it reads Healthy).
//
// The guards, and what they do not cover (xpud/README.md, "Recovery"):
//  - the driver's process list of the last sample (xpud's own pid left out), at the request;
//  - /proc/<pid>/fd of every process against the card's own device node, on the driver thread
//    right before the write (device_node_users.h); a process whose files cannot be read makes
//    the scan blind, and the reset is refused. A process that opens the node between the scan
//    and the reset is not seen: the kernel's reset takes no such lock;
//  - xpud does not know which pod the cluster allocated the card to. A pod holds a card through
//    its processes; one that holds it with no process open (between container restarts, before
//    its work starts) is not seen, and the card is reset under it. The automatic reset only
//    takes cards that have been Unhealthy for `unhealthy_for`: the device plugin stops offering
//    an Unhealthy card and the DRA driver taints it, so no new pod is placed on it meanwhile.
//  - the automatic reset takes only cards whose fault a reset can cure: a driver fault, failed
//    reads, memory not released. Not a stalled driver (all cards at once: the driver, not a
//    card), not PCIe findings (the link's, and the kernel's AER recovery has reset the link
//    already), not a card whose reset already failed (left out until an operator acts).
//
// Threads: the daemon's main thread; the reset itself runs on the driver thread through
// DriverRequests, and its reply comes back to the main thread after the next snapshot is
// published.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "xpud/backends/card_reset.h"
#include "xpud/config.h"
#include "xpud/recovery/reset_budget.h"
#include "xpud/requests/driver_requests.h"
#include "xpud/sampling/device_table.h"
#include "xpud/sampling/sampler.h"

namespace xpud {

// A reset not started, as the bus answers it: a com.kunlunxin.xpud1.Error.* or
// org.freedesktop.DBus.Error.LimitsExceeded, and a message naming the card and the cause.
struct ResetRefusal {
  std::string error_name;
  std::string message;
};

class CardRecovery {
 public:
  using Clock = std::chrono::steady_clock;
  // The outcome of a reset that was started: nullopt once the card was reset and read again.
  using Reply = std::function<void(const std::optional<DriverChangeError>&)>;

  struct Setup {
    RecoveryPolicy policy;
    std::shared_ptr<CardResetControl> control;  // null: this backend cannot reset cards
    std::filesystem::path proc_root = "/proc";  // [sysfs] root's proc
    std::filesystem::path node_root = "/";      // [sysfs] root: where the device nodes are
    unsigned own_pid = 0;                       // xpud's, never a user of a card
    // The sim backend's stand-in for its nodes (/dev/null), which is no card's: empty for the
    // hardware backends (device_node_users.h).
    std::filesystem::path node_stand_in;
  };

  // `resets_changed(index)` runs when a card's Resets counters moved (to tell the bus).
  CardRecovery(Setup setup, DriverRequests& requests, Sampler& sampler, DeviceTable& table,
               std::function<void(unsigned)> resets_changed);

  // After a configuration reload. A smaller max_resets_per_hour applies to the resets already
  // made; auto = false stops automatic resets at once (one under way finishes).
  void set_policy(const RecoveryPolicy& policy);

  // ResetDevice for card `index`, asked by `who` ("uid 0"). A refusal now, or the reset is
  // started and `done` gets its outcome later.
  std::optional<ResetRefusal> request(unsigned index, const std::string& who, Reply done);

  // After each published snapshot: the checks of reset cards, and the automatic resets due.
  void observe(Clock::time_point now);

 private:
  struct Check {
    Clock::time_point deadline;
    std::string origin;
  };

  // Not const: asking the budget drops the resets that left its window.
  std::optional<ResetRefusal> guard(const PublishedDevice& card, Clock::time_point now);
  void start(const PublishedDevice& card, std::string origin, Reply done, Clock::time_point now);
  void finished(const DeviceIdentity& card, const std::string& origin,
                const std::optional<DriverChangeError>& error, Clock::time_point spent_at);
  void check(const std::string& uuid, const Check& check, Clock::time_point now, bool& done);
  void automatic(Clock::time_point now);
  void count(const std::string& uuid, std::string_view result);

  Setup setup_;
  DriverRequests& requests_;
  Sampler& sampler_;
  DeviceTable& table_;
  std::function<void(unsigned)> resets_changed_;
  ResetBudget budget_;
  std::set<std::string> under_way_;      // uuid: the reset job has not answered yet
  std::map<std::string, Check> checks_;  // uuid: reset, not yet Healthy again
  std::map<std::string, Clock::time_point> unhealthy_since_;  // uuid, for `auto`
  std::map<std::string, std::string> auto_refused_;  // uuid -> the refusal's error, logged once
};

}  // namespace xpud
