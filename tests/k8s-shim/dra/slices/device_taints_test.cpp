#include "k8s-shim/dra/slices/device_taints.h"

#include <gtest/gtest.h>

#include "tests/support/card_builder.h"

namespace shim::dra {
namespace {

using xpu::test::card;

TEST(DeviceTaints, AHealthyCardHasNone) {
  EXPECT_TRUE(taints_for(card(0), TaintPolicy{}).empty());
}

TEST(DeviceTaints, AnUnhealthyCardIsNoScheduleByDefaultKeyedByItsReasonKind) {
  xpu::DeviceInfo faulty =
      card(3).unhealthy("driver reports state ERROR (3)").health_reason_kind("driver_fault");
  auto taints = taints_for(faulty, TaintPolicy{});
  ASSERT_EQ(taints.size(), 1u);
  EXPECT_EQ(taints[0].key, "xpu.kunlunxin.com/driver_fault");
  EXPECT_EQ(taints[0].value, "driver-reports-state-ERROR-3");
  EXPECT_EQ(taints[0].effect, "NoSchedule");
  EXPECT_TRUE(taints[0].time_added.empty());
}

TEST(DeviceTaints, NoExecuteOnlyForTheKindsTheOperatorNamed) {
  TaintPolicy policy;
  ASSERT_TRUE(parse_no_execute_kinds("driver_fault,xpud_unreachable", policy));
  xpu::DeviceInfo lost = card(0).unhealthy("device lost").health_reason_kind("driver_fault");
  xpu::DeviceInfo slow =
      card(1).unhealthy("reads keep failing: timeout").health_reason_kind("read_failures");
  EXPECT_EQ(taints_for(lost, policy).at(0).effect, "NoExecute");
  EXPECT_EQ(taints_for(slow, policy).at(0).effect, "NoSchedule");
}

TEST(DeviceTaints, ACardThatKeptItsMemoryIsTaintedByItsOwnKindAndMayBeNoExecute) {
  xpu::DeviceInfo kept =
      card(2)
          .unhealthy(
              "memory not released: 2048 MiB in use with no process 30 s after the last one left")
          .health_reason_kind("memory_not_released");
  auto taints = taints_for(kept, TaintPolicy{});
  ASSERT_EQ(taints.size(), 1u);
  EXPECT_EQ(taints[0].key, "xpu.kunlunxin.com/memory_not_released");
  EXPECT_EQ(taints[0].effect, "NoSchedule");
  TaintPolicy policy;
  ASSERT_TRUE(parse_no_execute_kinds("memory_not_released", policy));
  EXPECT_EQ(taints_for(kept, policy).at(0).effect, "NoExecute");
}

TEST(DeviceTaints, NoneOnlyReports) {
  TaintPolicy policy;
  ASSERT_TRUE(parse_taint_effect("None", policy));
  auto taints = taints_for(card(0).unhealthy("x").health_reason_kind("read_failures"), policy);
  ASSERT_EQ(taints.size(), 1u);
  EXPECT_EQ(taints[0].effect, "None");
}

TEST(DeviceTaints, AnUnknownOrUnusableKindGetsTheGenericKey) {
  EXPECT_EQ(taints_for(card(0).unhealthy("old xpud"), {}).at(0).key, "xpu.kunlunxin.com/unhealthy");
  EXPECT_EQ(
      taints_for(card(0).unhealthy("x").health_reason_kind("bad kind/with slash"), {}).at(0).key,
      "xpu.kunlunxin.com/unhealthy");
  EXPECT_EQ(
      taints_for(card(0).unhealthy("x").health_reason_kind(std::string(80, 'a')), {}).at(0).key,
      "xpu.kunlunxin.com/unhealthy");
}

TEST(DeviceTaints, ValuesAreLabelValues) {
  EXPECT_EQ(taint_value(""), "");
  EXPECT_EQ(taint_value("  ::  "), "");
  EXPECT_EQ(taint_value("device node /dev/xpu3 does not exist"),
            "device-node-dev-xpu3-does-not-exist");
  EXPECT_EQ(taint_value("-_.ok._-"), "ok");
  EXPECT_EQ(taint_value("温度过高 (95 C)"), "95-C");
  std::string longest = taint_value(std::string(62, 'a') + "-b-c");
  EXPECT_EQ(longest, std::string(62, 'a'));  // cut at 63 ("...a-"), then trimmed of the '-'
  EXPECT_LE(taint_value(std::string(500, 'z')).size(), 63u);
}

TEST(DeviceTaints, FlagsRefuseWhatTheyCannotMean) {
  TaintPolicy policy;
  auto effect = parse_taint_effect("NoExecute", policy);
  ASSERT_FALSE(effect);
  EXPECT_NE(effect.error().find("--device-taint-no-execute"), std::string::npos);
  EXPECT_FALSE(parse_taint_effect("noschedule", policy));
  EXPECT_EQ(policy.effect, "NoSchedule");

  auto kinds = parse_no_execute_kinds("driver_fault,melted", policy);
  ASSERT_FALSE(kinds);
  EXPECT_NE(kinds.error().find("'melted' is not a reason kind"), std::string::npos);
  EXPECT_TRUE(policy.no_execute_kinds.empty());  // nothing half-applied
  EXPECT_FALSE(parse_no_execute_kinds("driver_fault,", policy));
  // The PCIe reasons are kinds of their own (xpud's [pcie]).
  EXPECT_TRUE(parse_no_execute_kinds("pcie_fatal_error,pcie_link_downtrained", policy));
  EXPECT_EQ(policy.no_execute_kinds.size(), 2u);
  // So is a card xpud's recovery reset and could not bring back.
  EXPECT_TRUE(parse_no_execute_kinds("reset_failed", policy));
  EXPECT_TRUE(policy.no_execute_kinds.contains("reset_failed"));
  EXPECT_TRUE(parse_no_execute_kinds("driver_fault", policy));
  EXPECT_TRUE(parse_no_execute_kinds("", policy));
  EXPECT_TRUE(policy.no_execute_kinds.empty());
}

}  // namespace
}  // namespace shim::dra
