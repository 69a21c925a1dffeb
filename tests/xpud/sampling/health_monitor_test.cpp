#include "xpud/sampling/health_monitor.h"

#include <gtest/gtest.h>

namespace xpud {
namespace {

DeviceReading ok() {
  return {};
}
DeviceReading fault(std::string reason) {
  return {{}, std::move(reason), std::nullopt, std::nullopt};
}
DeviceReading failed(std::string error) {
  return {{}, std::nullopt, std::move(error), std::nullopt};
}

TEST(HealthMonitor, CleanReadingsAreHealthy) {
  HealthMonitor monitor(3);
  const auto& state = monitor.update("u0", ok());
  EXPECT_TRUE(state.healthy);
  EXPECT_EQ(state.reason, "");
}

TEST(HealthMonitor, DriverFaultIsUnhealthyAtOnceWithTheReason) {
  HealthMonitor monitor(3);
  const auto& state = monitor.update("u0", fault("driver reports state ERROR (207)"));
  EXPECT_FALSE(state.healthy);
  EXPECT_EQ(state.reason, "driver reports state ERROR (207)");
}

TEST(HealthMonitor, ReadFailuresCountUntilTheThreshold) {
  HealthMonitor monitor(3);
  EXPECT_TRUE(monitor.update("u0", failed("timeout")).healthy);
  EXPECT_TRUE(monitor.update("u0", failed("timeout")).healthy);
  const auto& state = monitor.update("u0", failed("XPU_IS_LOST"));
  EXPECT_FALSE(state.healthy);
  EXPECT_EQ(state.reason, "reads keep failing: XPU_IS_LOST");
}

TEST(HealthMonitor, TheReasonKindIsOneFixedWordPerCause) {
  HealthMonitor monitor(2);
  EXPECT_EQ(monitor.update("u0", ok()).reason_kind, "");
  EXPECT_EQ(monitor.update("u0", fault("state ERROR")).reason_kind, "driver_fault");
  EXPECT_EQ(monitor.update("u0", ok()).reason_kind, "");
  EXPECT_EQ(monitor.update("u0", failed("timeout")).reason_kind, "");  // still Healthy
  const auto& state = monitor.update("u0", failed("timeout"));
  EXPECT_FALSE(state.healthy);
  EXPECT_EQ(state.reason_kind, "read_failures");
}

TEST(HealthMonitor, PersistentFailureKeepsItsReason) {
  HealthMonitor monitor(2);
  monitor.update("u0", failed("driver busy: 'read xpu0' has not returned after 300 ms"));
  const std::string first =
      monitor.update("u0", failed("driver busy: 'read xpu0' has not returned after 400 ms")).reason;
  EXPECT_EQ(first, "reads keep failing: driver busy: 'read xpu0' has not returned after 400 ms");
  // More failures of the same kind, longer durations: the reason a client saw stays.
  for (int ms = 500; ms < 5000; ms += 100)
    EXPECT_EQ(monitor
                  .update("u0", failed("driver busy: 'read xpu0' has not returned after " +
                                       std::to_string(ms) + " ms"))
                  .reason,
              first);
  // Another cause is a new reason.
  EXPECT_EQ(monitor.update("u0", failed("xpumlDeviceGetState(xpu0): UNKNOWN (999)")).reason,
            "reads keep failing: xpumlDeviceGetState(xpu0): UNKNOWN (999)");
  EXPECT_EQ(monitor.update("u0", fault("driver reports state ERROR (207)")).reason,
            "driver reports state ERROR (207)");
  EXPECT_EQ(monitor.update("u0", fault("driver reports state ERROR (207)")).reason,
            "driver reports state ERROR (207)");
  EXPECT_EQ(monitor.update("u0", fault("driver reports state IN_RESET (206)")).reason,
            "driver reports state IN_RESET (206)");
}

TEST(HealthMonitor, ReasonKindIgnoresDurationsOnly) {
  EXPECT_EQ(reason_kind("'read xpu3' timed out after 2000 ms"), "'read xpu3' timed out after N ms");
  EXPECT_EQ(reason_kind("busy for 12 ms, then 7 ms"), "busy for N ms, then N ms");
  EXPECT_EQ(reason_kind("UNKNOWN (999)"), "UNKNOWN (999)");
  EXPECT_EQ(reason_kind("12msec 3 s"), "12msec 3 s");
  EXPECT_EQ(reason_kind(""), "");
}

TEST(HealthMonitor, ASuccessResetsTheFailureCount) {
  HealthMonitor monitor(2);
  monitor.update("u0", failed("e"));
  monitor.update("u0", ok());
  EXPECT_TRUE(monitor.update("u0", failed("e")).healthy);
  EXPECT_FALSE(monitor.update("u0", failed("e")).healthy);
}

TEST(HealthMonitor, RecoveryAlwaysReturnsToHealthy) {
  HealthMonitor monitor(1);
  monitor.update("u0", fault("IN_RESET"));
  EXPECT_TRUE(monitor.update("u0", ok()).healthy);
  monitor.update("u0", failed("e"));
  const auto& state = monitor.update("u0", ok());
  EXPECT_TRUE(state.healthy);
  EXPECT_EQ(state.reason, "");
}

TEST(HealthMonitor, CardsAreIndependent) {
  HealthMonitor monitor(1);
  monitor.update("u0", fault("ERROR"));
  EXPECT_TRUE(monitor.update("u1", ok()).healthy);
  EXPECT_FALSE(monitor.update("u0", failed("still bad")).healthy);
}

TEST(HealthMonitor, ForgottenCardStartsFresh) {
  HealthMonitor monitor(1);
  monitor.update("u0", fault("ERROR"));
  monitor.forget("u0");
  EXPECT_TRUE(monitor.update("u0", ok()).healthy);
}

TEST(HealthMonitor, LoweringTheThresholdAppliesToTheNextRead) {
  HealthMonitor monitor(5);
  monitor.update("u0", failed("e"));
  monitor.set_failure_threshold(2);
  EXPECT_FALSE(monitor.update("u0", failed("e")).healthy);
}

}  // namespace
}  // namespace xpud
