#include "xpud/sampling/pcie_health.h"

#include <gtest/gtest.h>

#include "common/names.h"
#include "xpud/sampling/health_monitor.h"

namespace xpud {
namespace {

using namespace std::chrono_literals;
using Clock = PcieHealthJudge::Clock;
namespace kind = xpu::names::reason_kind;

constexpr std::uint64_t kGen4 = 16000000000;
constexpr std::uint64_t kGen3 = 8000000000;

// A card at 16 GT/s x16 with the given AER totals.
PcieLinkState link(std::uint64_t correctable, std::uint64_t nonfatal, std::uint64_t fatal) {
  return PcieLinkState{kGen4, kGen4, 16u, 16u, correctable, nonfatal, fatal};
}

PcieHealthPolicy policy(PcieAction downtrain = PcieAction::kWarn,
                        PcieAction nonfatal = PcieAction::kWarn) {
  return PcieHealthPolicy{downtrain, nonfatal, 60s};
}

class PcieJudge : public ::testing::Test {
 protected:
  PcieVerdict judge(const PcieLinkState& pcie, std::chrono::milliseconds after = 0ms) {
    now_ += after;
    return judge_.judge("u0", "xpu0", pcie, now_);
  }

  PcieHealthJudge judge_{policy()};
  Clock::time_point now_ = Clock::now();
};

TEST_F(PcieJudge, CountsFromBeforeXpudWatchedAreTheBaselineNotAnAlarm) {
  const auto verdict = judge(link(40, 3, 2));
  EXPECT_FALSE(verdict.unhealthy);
  EXPECT_TRUE(verdict.warnings.empty());
  EXPECT_FALSE(judge(link(40, 3, 2), 1s).unhealthy);
}

TEST_F(PcieJudge, ANewFatalErrorTakesTheCardOutForTheHoldThenReleasesIt) {
  judge(link(0, 0, 0));
  auto verdict = judge(link(0, 0, 1), 1s);
  ASSERT_TRUE(verdict.unhealthy);
  EXPECT_EQ(verdict.unhealthy->kind, kind::kPcieFatalError);
  EXPECT_EQ(verdict.unhealthy->text, "new fatal PCIe error (AER)");
  // Held while no further error comes, with the same reason (one signal, not one per cycle).
  EXPECT_EQ(judge(link(0, 0, 1), 59s).unhealthy, verdict.unhealthy);
  // A further error restarts the hold.
  EXPECT_TRUE(judge(link(0, 0, 3), 1s).unhealthy);
  EXPECT_TRUE(judge(link(0, 0, 3), 59s).unhealthy);
  EXPECT_FALSE(judge(link(0, 0, 3), 1s).unhealthy);
}

TEST_F(PcieJudge, ACounterThatGoesBackIsANewBaselineAndEndsTheMark) {
  judge(link(0, 0, 5));
  EXPECT_TRUE(judge(link(0, 0, 6), 1s).unhealthy);
  // The function was removed and found again: a fresh pci_dev counts from 0.
  EXPECT_FALSE(judge(link(0, 0, 0), 1s).unhealthy);
  EXPECT_FALSE(judge(link(0, 0, 0), 1s).unhealthy);
  // Counting goes on from the new baseline.
  EXPECT_TRUE(judge(link(0, 0, 1), 1s).unhealthy);
}

TEST_F(PcieJudge, AnUnreadableCountKeepsTheBaselineAndTheMark) {
  judge(link(0, 0, 1));
  EXPECT_TRUE(judge(link(0, 0, 2), 1s).unhealthy);
  PcieLinkState unreadable = link(0, 0, 0);
  unreadable.aer_fatal.reset();
  EXPECT_TRUE(judge(unreadable, 1s).unhealthy);
  // Readable again at the old figure: no new error, no reset.
  EXPECT_TRUE(judge(link(0, 0, 2), 1s).unhealthy);
  EXPECT_FALSE(judge(link(0, 0, 2), 60s).unhealthy);
}

TEST_F(PcieJudge, ANewNonfatalErrorIsAWarningByDefault) {
  judge(link(0, 0, 0));
  const auto verdict = judge(link(0, 1, 0), 1s);
  EXPECT_FALSE(verdict.unhealthy);
  EXPECT_EQ(verdict.warnings, (std::map<std::string, std::string>{
                                  {"pcie_nonfatal_error", "new nonfatal PCIe error (AER)"}}));
  EXPECT_TRUE(judge(link(0, 1, 0), 60s).warnings.empty());
}

TEST_F(PcieJudge, ANewNonfatalErrorTakesTheCardOutWhenThePolicySaysSo) {
  judge_.set_policy(policy(PcieAction::kWarn, PcieAction::kUnhealthy));
  judge(link(0, 0, 0));
  const auto verdict = judge(link(0, 1, 0), 1s);
  ASSERT_TRUE(verdict.unhealthy);
  EXPECT_EQ(verdict.unhealthy->kind, kind::kPcieNonfatalError);
}

TEST_F(PcieJudge, CorrectableErrorsAreNeverJudged) {
  judge(link(0, 0, 0));
  const auto verdict = judge(link(100000, 0, 0), 1s);
  EXPECT_FALSE(verdict.unhealthy);
  EXPECT_TRUE(verdict.warnings.empty());
}

TEST_F(PcieJudge, ADowntrainedLinkIsAWarningWhileItLasts) {
  PcieLinkState slow = link(0, 0, 0);
  slow.speed = kGen3;
  slow.width = 8;
  auto verdict = judge(slow);
  EXPECT_FALSE(verdict.unhealthy);
  EXPECT_EQ(verdict.warnings.at("pcie_link_downtrained"),
            "PCIe link downtrained: 8 GT/s x8, the card can do 16 GT/s x16");
  EXPECT_TRUE(judge(link(0, 0, 0), 1s).warnings.empty());
}

TEST_F(PcieJudge, ADowntrainedLinkTakesTheCardOutWhenThePolicySaysSo) {
  judge_.set_policy(policy(PcieAction::kUnhealthy));
  PcieLinkState narrow = link(0, 0, 0);
  narrow.width = 4;
  const auto verdict = judge(narrow);
  ASSERT_TRUE(verdict.unhealthy);
  EXPECT_EQ(verdict.unhealthy->kind, kind::kPcieLinkDowntrained);
  EXPECT_EQ(verdict.unhealthy->text,
            "PCIe link downtrained: 16 GT/s x4, the card can do 16 GT/s x16");
}

TEST_F(PcieJudge, TheMostSevereFindingIsTheReasonAndTheOthersStayWarnings) {
  judge_.set_policy(policy(PcieAction::kUnhealthy, PcieAction::kUnhealthy));
  judge(link(0, 0, 0));
  PcieLinkState everything = link(0, 1, 1);
  everything.speed = 2500000000;
  const auto verdict = judge(everything, 1s);
  ASSERT_TRUE(verdict.unhealthy);
  EXPECT_EQ(verdict.unhealthy->kind, kind::kPcieFatalError);
  EXPECT_EQ(verdict.warnings.size(), 2u);
  EXPECT_EQ(verdict.warnings.at("pcie_link_downtrained"),
            "PCIe link downtrained: 2.5 GT/s x16, the card can do 16 GT/s x16");
}

TEST(PcieDowntrain, OnlyFiguresKnownOnBothSidesCount) {
  PcieLinkState pcie{kGen3, std::nullopt, 8u, 16u, std::nullopt, std::nullopt, std::nullopt};
  EXPECT_EQ(pcie_downtrain(pcie), "PCIe link downtrained: x8, the card can do x16");
  pcie.width.reset();
  EXPECT_EQ(pcie_downtrain(pcie), std::nullopt);
  EXPECT_EQ(pcie_downtrain(PcieLinkState{}), std::nullopt);
  // Faster than the maximum (a capability the register understates) is no downtrain.
  EXPECT_EQ(pcie_downtrain(
                PcieLinkState{kGen4, kGen3, 16u, 8u, std::nullopt, std::nullopt, std::nullopt}),
            std::nullopt);
}

TEST(PcieJudgeCards, EachCardHasItsOwnBaselineAndAForgottenCardStartsAgain) {
  PcieHealthJudge judge(policy());
  const auto now = Clock::now();
  judge.judge("u0", "xpu0", link(0, 0, 0), now);
  judge.judge("u1", "xpu1", link(0, 0, 7), now);
  EXPECT_TRUE(judge.judge("u0", "xpu0", link(0, 0, 1), now + 1s).unhealthy);
  EXPECT_FALSE(judge.judge("u1", "xpu1", link(0, 0, 7), now + 1s).unhealthy);
  judge.forget("u0");
  EXPECT_FALSE(judge.judge("u0", "xpu0", link(0, 0, 1), now + 2s).unhealthy);
}

TEST(HealthMonitorFinding, AFindingTakesOutAHealthyCardAndLeavesADriverFaultFirst) {
  HealthMonitor monitor(3);
  monitor.update("u0", DeviceReading{});
  const auto& state =
      monitor.add_finding("u0", "new fatal PCIe error (AER)", kind::kPcieFatalError);
  EXPECT_FALSE(state.healthy);
  EXPECT_EQ(state.reason_kind, kind::kPcieFatalError);
  // The next clean reading clears it unless the finding is given again.
  EXPECT_TRUE(monitor.update("u0", DeviceReading{}).healthy);

  DeviceReading fault;
  fault.fault = "driver reports state ERROR";
  monitor.update("u0", fault);
  const auto& faulty =
      monitor.add_finding("u0", "new fatal PCIe error (AER)", kind::kPcieFatalError);
  EXPECT_EQ(faulty.reason, "driver reports state ERROR");
  EXPECT_EQ(faulty.reason_kind, kind::kDriverFault);
}

}  // namespace
}  // namespace xpud
