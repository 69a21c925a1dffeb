// The XPUHealthy condition as the cards make it: what an operator reads in `kubectl describe
// node` for each state of the cards.
#include "k8s-shim/node_status/xpu_condition.h"

#include <gtest/gtest.h>

#include "tests/support/card_builder.h"

namespace shim::node_status {
namespace {

using namespace std::chrono_literals;
using xpu::test::absent;
using xpu::test::card;
using xpu::test::present;

TEST(XpuCondition, TrueWhenEveryCardIsHealthy) {
  auto condition = xpu_condition(present({card(0), card(1), card(2)}), false, 30s);
  ASSERT_TRUE(condition);
  EXPECT_EQ(condition->status, "True");
  EXPECT_EQ(condition->reason, "XPUsHealthy");
  EXPECT_EQ(condition->message, "all 3 cards are healthy");
}

TEST(XpuCondition, FalseNamingEachUnhealthyCardAndItsCause) {
  auto condition = xpu_condition(
      present({card(0), card(3).unhealthy("driver fault: card in error state"), card(4),
               card(5).unhealthy("memory not released: 2048 MiB held with no process")}),
      false, 30s);
  ASSERT_TRUE(condition);
  EXPECT_EQ(condition->status, "False");
  EXPECT_EQ(condition->reason, "XPUUnhealthy");
  EXPECT_EQ(condition->message,
            "2 of 4 cards unhealthy: xpu3: driver fault: card in error state; xpu5: memory not "
            "released: 2048 MiB held with no process");
}

// xpud's recovery ([recovery]): a card its reset did not cure says so in its reason, and the
// condition passes that on as it is, so a repair tool reading the node sees the reset failed.
TEST(XpuCondition, ACardWhoseResetFailedIsNamedWithThatCause) {
  auto condition = xpu_condition(
      present({card(0), card(2).unhealthy(
                            "reset failed: still Unhealthy 30000 ms after the reset (XPU hang)")}),
      false, 30s);
  ASSERT_TRUE(condition);
  EXPECT_EQ(condition->status, "False");
  EXPECT_EQ(condition->message,
            "1 of 2 cards unhealthy: xpu2: reset failed: still Unhealthy 30000 ms after the reset "
            "(XPU hang)");
}

TEST(XpuCondition, AVirtualFunctionCountsLikeAnyCard) {
  auto condition = xpu_condition(
      present({card(0), card(8).virtual_function().unhealthy("VF lost")}), false, 30s);
  ASSERT_TRUE(condition);
  EXPECT_EQ(condition->status, "False");
  EXPECT_EQ(condition->message, "1 of 2 cards unhealthy: xpu8: VF lost");
}

TEST(XpuCondition, AnUnhealthyCardWithoutAReasonStillSaysSo) {
  auto condition = xpu_condition(present({card(1).healthy(false).name("")}), false, 30s);
  ASSERT_TRUE(condition);
  EXPECT_EQ(condition->message, "1 of 1 card unhealthy: card 1: unhealthy");
}

TEST(XpuCondition, UnknownOncePastTheGracePeriod) {
  // CardState's view past the grace period: every card unhealthy for xpud's absence.
  auto condition =
      xpu_condition(absent({card(0).unhealthy("xpud has been unreachable")}), true, 30s);
  ASSERT_TRUE(condition);
  EXPECT_EQ(condition->status, "Unknown");
  EXPECT_EQ(condition->reason, "XpudUnreachable");
  EXPECT_EQ(condition->message,
            "xpud has been unreachable for longer than the grace period (30 s): no card is "
            "offered until it is back (1 card known before)");
}

TEST(XpuCondition, NothingWhileXpudHasNotAnsweredWithinTheGracePeriod) {
  // A restart of the role says nothing new of the cards until xpud answers: what the node holds
  // stays.
  EXPECT_FALSE(xpu_condition(absent({}), false, 30s));
  EXPECT_FALSE(xpu_condition(absent({card(0)}), false, 30s));
}

TEST(XpuCondition, FalseWhenXpudReportsNoCards) {
  auto condition = xpu_condition(present({}), false, 30s);
  ASSERT_TRUE(condition);
  EXPECT_EQ(condition->status, "False");
  EXPECT_EQ(condition->reason, "NoXPUs");
}

TEST(XpuCondition, HostileReasonTextStaysOneBoundedLine) {
  const std::string long_reason(5000, 'x');
  std::vector<xpu::DeviceInfo> cards;
  for (unsigned i = 0; i < 64; ++i) cards.push_back(card(i).unhealthy(long_reason));
  cards.push_back(card(64).unhealthy("line one\nline two\r\tend"));
  auto condition = xpu_condition(present(cards), false, 30s);
  ASSERT_TRUE(condition);
  EXPECT_LE(condition->message.size(), kMaxMessageBytes);
  EXPECT_NE(condition->message.find("xpu0: " + std::string(kMaxCardReasonBytes, 'x') + ";"),
            std::string::npos);
  EXPECT_NE(condition->message.find(" more"), std::string::npos) << condition->message;
  EXPECT_EQ(condition->message.find('\n'), std::string::npos);

  auto one = xpu_condition(present({card(2).unhealthy("line one\nline two\r\tend")}), false, 30s);
  EXPECT_EQ(one->message, "1 of 1 card unhealthy: xpu2: line one line two  end");
}

TEST(XpuCondition, AReasonCutMidCharacterStaysValidUtf8) {
  // 159 ASCII bytes then a 3-byte character across the 160-byte cut.
  auto condition = xpu_condition(
      present({card(0).unhealthy(std::string(159, 'a') + "\xe6\xb8\xa9" + "tail")}), false, 30s);
  ASSERT_TRUE(condition);
  EXPECT_EQ(condition->message, "1 of 1 card unhealthy: xpu0: " + std::string(159, 'a'));
}

}  // namespace
}  // namespace shim::node_status
