#include "xpud/health_monitor.h"

#include <gtest/gtest.h>

namespace xpud {
namespace {

DeviceReading ok() { return {}; }
DeviceReading fault(std::string reason) { return {{}, std::move(reason), std::nullopt}; }
DeviceReading failed(std::string error) { return {{}, std::nullopt, std::move(error)}; }

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
  EXPECT_EQ(state.reason, "3 consecutive failed reads, last: XPU_IS_LOST");
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
