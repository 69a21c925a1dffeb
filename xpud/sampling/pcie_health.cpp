#include "xpud/sampling/pcie_health.h"

#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/names.h"

namespace xpud {
namespace {

namespace reason_kind = xpu::names::reason_kind;

constexpr std::string_view kFatalReason = "new fatal PCIe error (AER)";
constexpr std::string_view kNonfatalReason = "new nonfatal PCIe error (AER)";

// 16000000000 -> "16 GT/s", 2500000000 -> "2.5 GT/s".
std::string gigatransfers(std::uint64_t transfers) {
  constexpr std::uint64_t kGiga = 1000000000;
  std::string text = std::to_string(transfers / kGiga);
  const std::uint64_t tenths = transfers % kGiga / (kGiga / 10);
  if (tenths != 0) text += "." + std::to_string(tenths);
  return text + " GT/s";
}

// "8 GT/s x16", or what of it is known.
std::string link_text(std::optional<std::uint64_t> speed, std::optional<unsigned> width) {
  std::string text;
  if (speed) text = gigatransfers(*speed);
  if (width) text += (text.empty() ? "x" : " x") + std::to_string(*width);
  return text;
}

}  // namespace

std::optional<std::string> pcie_downtrain(const PcieLinkState& pcie) {
  const bool slower = pcie.speed && pcie.max_speed && *pcie.speed < *pcie.max_speed;
  const bool narrower = pcie.width && pcie.max_width && *pcie.width < *pcie.max_width;
  if (!slower && !narrower) return std::nullopt;
  // Both figures of the pair that is compared; the other pair only when both sides know it.
  const bool speeds = pcie.speed && pcie.max_speed;
  const bool widths = pcie.width && pcie.max_width;
  return "PCIe link downtrained: " +
         link_text(speeds ? pcie.speed : std::nullopt, widths ? pcie.width : std::nullopt) +
         ", the card can do " +
         link_text(speeds ? pcie.max_speed : std::nullopt, widths ? pcie.max_width : std::nullopt);
}

bool PcieHealthJudge::marked(Counter& counter, std::optional<std::uint64_t> count,
                             std::string_view subject, std::string_view severity,
                             Clock::time_point now) const {
  if (count) {
    if (!counter.baseline) {
      if (*count > 0)
        spdlog::info("{}: the kernel counted {} {} PCIe errors (AER) before xpud watched the card",
                     subject, *count, severity);
    } else if (*count < *counter.baseline) {
      spdlog::info(
          "{}: {} PCIe error count went back from {} to {} (the function was reset or found "
          "again); counting from there",
          subject, severity, *counter.baseline, *count);
      counter.last_rise.reset();
    } else if (*count > *counter.baseline) {
      spdlog::warn("{}: {} new {} PCIe error(s) (AER), {} since the function appeared", subject,
                   *count - *counter.baseline, severity, *count);
      counter.last_rise = now;
    }
    counter.baseline = count;
  }
  return counter.last_rise && now - *counter.last_rise < policy_.error_hold;
}

PcieVerdict PcieHealthJudge::judge(const std::string& uuid, std::string_view subject,
                                   const PcieLinkState& pcie, Clock::time_point now) {
  Card& card = cards_[uuid];
  // Most severe first: the first finding that takes the card out is the reason.
  std::vector<std::pair<PcieFinding, bool>> found;  // the finding, whether it takes the card out
  if (marked(card.fatal, pcie.aer_fatal, subject, "fatal", now))
    found.push_back({{reason_kind::kPcieFatalError, std::string(kFatalReason)}, true});
  if (marked(card.nonfatal, pcie.aer_nonfatal, subject, "nonfatal", now))
    found.push_back({{reason_kind::kPcieNonfatalError, std::string(kNonfatalReason)},
                     policy_.nonfatal == PcieAction::kUnhealthy});

  const auto downtrain = pcie_downtrain(pcie);
  if (downtrain)
    found.push_back({{reason_kind::kPcieLinkDowntrained, *downtrain},
                     policy_.downtrain == PcieAction::kUnhealthy});

  PcieVerdict verdict;
  for (auto& [finding, takes_out] : found) {
    if (takes_out && !verdict.unhealthy)
      verdict.unhealthy = std::move(finding);
    else
      verdict.warnings.emplace(std::string(finding.kind), std::move(finding.text));
  }
  return verdict;
}

}  // namespace xpud
