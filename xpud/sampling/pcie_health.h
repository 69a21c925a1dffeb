// Judges a card's PCIe link and AER counters (PcieLinkState, read by the backends from sysfs).
//
//  - A new fatal error (aer_dev_fatal's total rose): Unhealthy, reason kind pcie_fatal_error,
//    always. ERR_FATAL means the link itself failed; the kernel resets it and whatever was in
//    flight is lost, so the work on the card is not to be trusted and no new work belongs there
//    until it has shown it holds.
//  - A new nonfatal error (aer_dev_nonfatal rose) and a downtrained link (current speed or width
//    below the maximum, when both are known): a warning by default, Unhealthy (kinds
//    pcie_nonfatal_error, pcie_link_downtrained) when [pcie] says so (config.h says why).
//  - Correctable errors are the link layer's own repairs (replays): counted and published,
//    never judged here; their rate is for the monitoring's alerts.
//
// The counters are cumulative since the function appeared, so only increases count: the first
// reading of a card is its baseline (errors from before xpud watched it are not judged again on
// every start), and a counter that goes back (the function was removed and found again, a fresh
// pci_dev) becomes the new baseline and ends the mark of that severity, since the errors were
// the old function's. A new error marks the card for [pcie] error_hold_ms after the last one; a
// count that cannot be read this time keeps the baseline and the mark.
//
// The reasons name the cause without counts, so a card that keeps erring signals once; each
// rise and reset is a journal line here with the figures (the device table logs the warnings
// and health changes that follow).
//
// Owned by the sampler thread.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "xpud/config.h"
#include "xpud/device.h"

namespace xpud {

// One thing found wrong with the card's PCIe: a reason kind (xpu::names::reason_kind) and the
// text for HealthReason or HealthWarnings.
struct PcieFinding {
  std::string_view kind;
  std::string text;
  bool operator==(const PcieFinding&) const = default;
};

struct PcieVerdict {
  // What takes the card out, the most severe when several do: fatal, nonfatal, downtrain.
  std::optional<PcieFinding> unhealthy;
  // Everything else found, by kind: what [pcie] makes a warning, and what lost to `unhealthy`.
  std::map<std::string, std::string> warnings;
};

class PcieHealthJudge {
 public:
  using Clock = std::chrono::steady_clock;

  explicit PcieHealthJudge(PcieHealthPolicy policy) : policy_(policy) {}
  void set_policy(const PcieHealthPolicy& policy) { policy_ = policy; }

  // `uuid` keys the card (it survives index changes); `subject` names it in the journal.
  PcieVerdict judge(const std::string& uuid, std::string_view subject, const PcieLinkState& pcie,
                    Clock::time_point now);
  void forget(const std::string& uuid) { cards_.erase(uuid); }

 private:
  struct Counter {
    std::optional<std::uint64_t> baseline;
    std::optional<Clock::time_point> last_rise;
  };
  struct Card {
    Counter nonfatal;
    Counter fatal;
  };
  // Moves the counter to `count` and says whether the error's mark holds at `now`.
  bool marked(Counter& counter, std::optional<std::uint64_t> count, std::string_view subject,
              std::string_view severity, Clock::time_point now) const;

  PcieHealthPolicy policy_;
  std::map<std::string, Card> cards_;
};

// "PCIe link downtrained: 8 GT/s x16, the card can do 16 GT/s x16" when the link is slower or
// narrower than its maximum (each compared only when both figures are known); nullopt otherwise.
std::optional<std::string> pcie_downtrain(const PcieLinkState& pcie);

}  // namespace xpud
