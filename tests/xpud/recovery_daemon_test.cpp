// Resetting cards, as clients and operators see it: the real xpud on a private bus with the sim
// backend (its cards fault, and come back or not through a reset, by the Simulator's SetHealth,
// SetMetric and SetResetFails). ResetDevice refused while [recovery] is off, while the driver
// lists a process, while a process has the card's node open (/proc of a fake tree), past the
// hour's resets; a reset that cures the card, one that does not (reset_failed), and the automatic
// reset of a card Unhealthy for [recovery] unhealthy_for_ms with no user. Each step in the
// journal, each outcome in the Device's Resets.
#include <signal.h>

#include <gtest/gtest.h>

#include <sdbus-c++/sdbus-c++.h>
#include <cmath>
#include <filesystem>
#include <optional>

#include "common/names.h"
#include "common/xpud_client.h"
#include "tests/support/child_process.h"
#include "tests/support/notify_socket.h"
#include "tests/support/private_bus.h"
#include "tests/support/wait.h"

namespace {

using namespace std::chrono_literals;
using xpu::test::binary_path;
using xpu::test::ChildProcess;
using xpu::test::wait_until;
using xpu::test::write_file;
namespace names = xpu::names;
using Resets = std::map<std::string, std::uint64_t>;

constexpr const char* kSim =
    "[daemon]\nbackend = sim\n[sim]\ndevices = 4\n[sampling]\ninterval_ms = 100\n";

// The answer to a ResetDevice call: nullopt, or the error's name and message.
struct CallError {
  std::string name;
  std::string message;
};

class RecoveryDaemonTest : public ::testing::Test {
 protected:
  void start(const std::string& config) {
    write_file(config_, config);
    xpud_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{binary_path("xpud/xpud").string(), "--bus-address", bus_.address(),
                                 "--config", config_.string()},
        dir_.path() / "xpud.log",
        std::map<std::string, std::string>{{"NOTIFY_SOCKET", notify_.path()}});
    ASSERT_GE(notify_.wait_for("READY=1", 10s), 0) << xpud_->output();
  }

  std::unique_ptr<sdbus::IProxy> manager() {
    connection_ = sdbus::createSessionBusConnectionWithAddress(bus_.address());
    return sdbus::createProxy(*connection_, std::string(names::kBusName),
                              std::string(names::kManagerPath));
  }
  void simulate(const std::string& method, unsigned index, auto... args) {
    manager()
        ->callMethod(method)
        .onInterface(std::string(names::kSimulatorInterface))
        .withArguments(index, args...);
  }
  std::optional<CallError> reset(unsigned index) {
    try {
      manager()
          ->callMethod(std::string(names::member::kResetDevice))
          .onInterface(std::string(names::kManagerInterface))
          .withTimeout(20s)
          .withArguments(index);
    } catch (const sdbus::Error& e) {
      return CallError{e.getName(), e.getMessage()};
    }
    return std::nullopt;
  }
  xpu::DeviceInfo device(unsigned index) {
    auto devices = client_.list_devices();
    if (!devices || devices->size() <= index) {
      ADD_FAILURE() << "no " << names::device_name(index);
      return {};
    }
    return (*devices)[index];
  }
  bool reason_kind_becomes(unsigned index, const std::string& kind, std::chrono::seconds within) {
    return wait_until([&] { return device(index).health_reason_kind == kind; }, within);
  }
  // A card faulted by the driver with nothing on it: what a crashed job can leave.
  void fault_with_no_user(unsigned index) {
    simulate("SetMetric", index, std::string(names::metric::kProcessCount), 0.0);
    simulate("SetHealth", index, std::string("Unhealthy"), std::string("XPU hang"));
    ASSERT_TRUE(reason_kind_becomes(index, "driver_fault", 10s)) << xpud_->output();
  }
  // Waits until xpud has sampled for `span` more: a negative ("nothing happened") is asserted
  // after cycles that could have made it happen, not after a sleep.
  bool sampled_for(std::chrono::milliseconds span) {
    const auto after = std::chrono::duration_cast<std::chrono::microseconds>(
                           (std::chrono::system_clock::now() + span).time_since_epoch())
                           .count();
    return wait_until(
        [&] {
          auto snapshot = client_.get_metrics();
          return snapshot && static_cast<std::int64_t>(snapshot->timestamp_usec) > after;
        },
        span + 10s);
  }
  bool logged(const std::string& text) { return xpud_->output().find(text) != std::string::npos; }

  xpu::test::TempDir dir_;
  xpu::test::PrivateBus bus_;
  xpu::test::NotifySocket notify_{dir_.path() / "notify"};
  std::filesystem::path config_ = dir_.path() / "xpud.conf";
  std::unique_ptr<ChildProcess> xpud_;
  std::unique_ptr<sdbus::IConnection> connection_;
  xpu::XpudClient client_{xpu::ClientOptions{bus_.address(), 2s}};
};

TEST_F(RecoveryDaemonTest, ResetsAreRefusedWhileRecoveryIsOffTheDefault) {
  ASSERT_NO_FATAL_FAILURE(start(kSim));
  ASSERT_NO_FATAL_FAILURE(fault_with_no_user(1));
  auto refused = reset(1);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->name, names::kErrorNotSupported);
  EXPECT_EQ(refused->message, "resets are off: [recovery] enabled = false in xpud.conf");
  EXPECT_EQ(device(1).resets, (Resets{{"failed", 0}, {"refused", 1}, {"succeeded", 0}}));
  EXPECT_EQ(device(1).health_reason_kind, "driver_fault");
  EXPECT_TRUE(logged("xpu1: reset refused (ResetDevice by uid "));
  auto none = reset(9);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->name, names::kErrorNoSuchDevice);
}

TEST_F(RecoveryDaemonTest, AResetCuresAFaultedCardWithNoUserAndItIsOfferedAgain) {
  ASSERT_NO_FATAL_FAILURE(start(std::string(kSim) + "[recovery]\nenabled = true\n"));
  ASSERT_NO_FATAL_FAILURE(fault_with_no_user(2));
  auto refused = reset(2);
  EXPECT_FALSE(refused) << refused->name << ": " << refused->message << "\n" << xpud_->output();
  // Read again before the reply: Healthy at once, counted, each step in the journal.
  const auto card = device(2);
  EXPECT_TRUE(card.healthy) << card.health_reason;
  EXPECT_TRUE(wait_until([&] { return device(2).resets.at("succeeded") == 1; }, 5s));
  EXPECT_EQ(device(2).resets.at("failed"), 0u);
  EXPECT_TRUE(logged("xpu2: reset: ResetDevice by uid ")) << xpud_->output();
  EXPECT_TRUE(logged("; Unhealthy: XPU hang; resetting"));
  EXPECT_TRUE(logged("xpu2: reset: done (ResetDevice by uid "));
  EXPECT_TRUE(logged("xpu2: reset: Healthy after the reset (ResetDevice by uid "));
  EXPECT_GE(notify_.wait_for("STATUS=4 devices, 4 healthy, backend sim", 5s), 0);
}

TEST_F(RecoveryDaemonTest, RefusedWhileTheDriverListsAProcessOnTheCard) {
  ASSERT_NO_FATAL_FAILURE(start(std::string(kSim) + "[recovery]\nenabled = true\n"));
  simulate("SetHealth", 0u, std::string("Unhealthy"), std::string("XPU hang"));
  ASSERT_TRUE(reason_kind_becomes(0, "driver_fault", 10s));
  auto refused = reset(0);  // the simulated workload is still on it
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->name, names::kErrorInUse);
  EXPECT_EQ(refused->message, "xpu0 is in use: the driver counts 1 process(es) on it");
  EXPECT_EQ(device(0).resets.at("refused"), 1u);
  EXPECT_EQ(device(0).health_reason, "XPU hang");
}

TEST_F(RecoveryDaemonTest, RefusedWhileAProcessHasTheCardsNodeOpen) {
  // /dev and /proc of a fake tree: process 4242 holds /dev/xpu3 open, the driver lists nothing.
  const auto root = dir_.path() / "root";
  write_file(root / "dev/xpu3", "");
  std::filesystem::create_directories(root / "proc/4242/fd");
  std::filesystem::create_symlink(root / "dev/xpu3", root / "proc/4242/fd/7");
  std::filesystem::create_directories(root / "proc/4243/fd");  // a process with nothing open
  write_file(root / "proc/4244/fd", "hostile: not a directory");
  start(std::string(kSim) + "[sysfs]\nroot = " + root.string() + "\n[recovery]\nenabled = true\n");
  ASSERT_NO_FATAL_FAILURE(fault_with_no_user(3));
  auto refused = reset(3);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->name, names::kErrorInUse);
  EXPECT_EQ(refused->message, "xpu3 is in use: process(es) 4242 have its device node open");
  // The process leaves; the unreadable entry still makes the scan blind: refused, and said so.
  std::filesystem::remove_all(root / "proc/4242");
  refused = reset(3);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->name, names::kErrorInUse);
  EXPECT_NE(refused->message.find("the open files of 1 process(es) could not be read"),
            std::string::npos)
      << refused->message;
  // Neither reached the card: neither counts against the hour's resets.
  std::filesystem::remove(root / "proc/4244/fd");
  EXPECT_FALSE(reset(3)) << xpud_->output();
  EXPECT_TRUE(wait_until([&] { return device(3).healthy; }, 5s));
  EXPECT_EQ(device(3).resets, (Resets{{"failed", 0}, {"refused", 2}, {"succeeded", 1}}));
}

TEST_F(RecoveryDaemonTest, AtMostMaxResetsPerHourForEachCard) {
  ASSERT_NO_FATAL_FAILURE(
      start(std::string(kSim) + "[recovery]\nenabled = true\nmax_resets_per_hour = 1\n"));
  simulate("SetMetric", 1u, std::string(names::metric::kProcessCount), 0.0);
  simulate("SetMetric", 2u, std::string(names::metric::kProcessCount), 0.0);
  ASSERT_TRUE(wait_until(
      [&] {
        auto metrics = client_.get_metrics();
        return metrics && metrics->devices.size() == 4 &&
               metrics->devices[1].values.at(std::string(names::metric::kProcessCount)) == 0;
      },
      5s));
  EXPECT_FALSE(reset(1));
  auto refused = reset(1);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->name, names::bus::kErrorLimitsExceeded);
  EXPECT_NE(refused->message.find("xpu1 was reset 1 time(s) within the last hour ([recovery] "
                                  "max_resets_per_hour = 1); the next reset may be in "),
            std::string::npos)
      << refused->message;
  // Another card has its own allowance.
  EXPECT_FALSE(reset(2));
}

TEST_F(RecoveryDaemonTest, ACardTheResetDoesNotCureStaysOutWithReasonResetFailed) {
  ASSERT_NO_FATAL_FAILURE(
      start(std::string(kSim) + "[recovery]\nenabled = true\ncheck_timeout_ms = 1000\n"));
  ASSERT_NO_FATAL_FAILURE(fault_with_no_user(1));
  simulate("SetResetFails", 1u, true);
  EXPECT_FALSE(reset(1));  // the reset itself is done: the check tells
  ASSERT_TRUE(reason_kind_becomes(1, "reset_failed", 10s)) << xpud_->output();
  const auto card = device(1);
  EXPECT_FALSE(card.healthy);
  EXPECT_EQ(card.health_reason, "reset failed: still Unhealthy 1000 ms after the reset (XPU hang)");
  EXPECT_EQ(card.resets, (Resets{{"failed", 1}, {"refused", 0}, {"succeeded", 0}}));
  EXPECT_TRUE(
      logged("xpu1: reset failed: still Unhealthy 1000 ms after the reset (XPU hang); "
             "left out"));
  // It stays so until the card reads Healthy (here: the driver clears its fault).
  simulate("SetHealth", 1u, std::string("Healthy"), std::string());
  ASSERT_TRUE(wait_until([&] { return device(1).healthy; }, 10s));
  EXPECT_EQ(device(1).health_reason_kind, "");
}

TEST_F(RecoveryDaemonTest, AutoResetsACardUnhealthyForTheConfiguredTimeWithNoUser) {
  ASSERT_NO_FATAL_FAILURE(start(
      std::string(kSim) + "[recovery]\nenabled = true\nauto = true\nunhealthy_for_ms = 2000\n"));
  simulate("SetMetric", 2u, std::string(names::metric::kProcessCount), 0.0);
  const auto faulted = std::chrono::steady_clock::now();
  simulate("SetHealth", 2u, std::string("Unhealthy"), std::string("XPU hang"));
  ASSERT_TRUE(reason_kind_becomes(2, "driver_fault", 10s));
  ASSERT_TRUE(wait_until([&] { return device(2).healthy; }, 15s)) << xpud_->output();
  EXPECT_GE(std::chrono::steady_clock::now() - faulted, 2s);
  EXPECT_TRUE(wait_until([&] { return device(2).resets.at("succeeded") == 1; }, 5s));
  EXPECT_TRUE(logged("xpu2: reset: automatic: Unhealthy (driver_fault) for ")) << xpud_->output();
  EXPECT_TRUE(logged("s with no user; Unhealthy: XPU hang; resetting"));
  EXPECT_TRUE(logged("xpu2: reset: Healthy after the reset (automatic: "));
}

TEST_F(RecoveryDaemonTest, AutoLeavesACardWithAUserAndSaysSoOnce) {
  ASSERT_NO_FATAL_FAILURE(start(
      std::string(kSim) + "[recovery]\nenabled = true\nauto = true\nunhealthy_for_ms = 1000\n"));
  simulate("SetHealth", 0u, std::string("Unhealthy"), std::string("XPU hang"));
  ASSERT_TRUE(wait_until([&] { return device(0).resets.at("refused") == 1; }, 10s))
      << xpud_->output();
  // Many cycles later: still out, still refused once, never reset.
  ASSERT_TRUE(sampled_for(2s));
  EXPECT_EQ(device(0).resets, (Resets{{"failed", 0}, {"refused", 1}, {"succeeded", 0}}));
  EXPECT_EQ(device(0).health_reason_kind, "driver_fault");
  EXPECT_TRUE(logged("xpu0: reset refused (automatic: Unhealthy (driver_fault) for "));
}

TEST_F(RecoveryDaemonTest, AutoNeverTouchesACardWhileAutoIsOff) {
  ASSERT_NO_FATAL_FAILURE(
      start(std::string(kSim) + "[recovery]\nenabled = true\nunhealthy_for_ms = 1000\n"));
  ASSERT_NO_FATAL_FAILURE(fault_with_no_user(1));
  ASSERT_TRUE(sampled_for(3s));
  EXPECT_EQ(device(1).health_reason_kind, "driver_fault");
  EXPECT_EQ(device(1).resets, (Resets{{"failed", 0}, {"refused", 0}, {"succeeded", 0}}));
}

}  // namespace
