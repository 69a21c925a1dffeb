// The check of a card its tenant has left, as clients see it: the real xpud on a private bus,
// with the sim backend (the tenant's leaving made with the Simulator's SetMetric) and with the
// fake libxpuml (its process list and memory info, as the vendor's header defines them). A card
// left holding memory with no process turns Unhealthy "memory_not_released" once the bound has
// passed, never before, with a DeviceHealthChanged signal, the Device's properties and a journal
// line, and Healthy again when the memory comes back down.
#include <signal.h>

#include <gtest/gtest.h>

#include <sdbus-c++/sdbus-c++.h>
#include <cmath>
#include <mutex>
#include <tuple>

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
using Clock = std::chrono::steady_clock;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// What a client on the bus hears: each DeviceHealthChanged with the moment it arrived.
class HealthSignals {
 public:
  struct Heard {
    std::string device;
    std::string health;
    std::string reason;
    Clock::time_point at;
  };

  explicit HealthSignals(const std::string& bus_address)
      : connection_(sdbus::createSessionBusConnectionWithAddress(bus_address)),
        manager_(sdbus::createProxy(*connection_, std::string(names::kBusName),
                                    std::string(names::kManagerPath))) {
    manager_->uponSignal(std::string(names::signals::kDeviceHealthChanged))
        .onInterface(std::string(names::kManagerInterface))
        .call([this](const sdbus::ObjectPath& device, const std::string& health,
                     const std::string& reason) {
          std::lock_guard lock(mutex_);
          heard_.push_back(Heard{device, health, reason, Clock::now()});
        });
    manager_->finishRegistration();
    connection_->enterEventLoopAsync();
  }
  ~HealthSignals() { connection_->leaveEventLoop(); }
  HealthSignals(const HealthSignals&) = delete;
  HealthSignals& operator=(const HealthSignals&) = delete;

  std::vector<Heard> heard() const {
    std::lock_guard lock(mutex_);
    return heard_;
  }
  // Waits for the `n`th signal (counting from 1).
  std::optional<Heard> wait_for(std::size_t n, std::chrono::milliseconds timeout) const {
    if (!wait_until([&] { return heard().size() >= n; }, timeout)) return std::nullopt;
    return heard()[n - 1];
  }

 private:
  std::unique_ptr<sdbus::IConnection> connection_;
  std::unique_ptr<sdbus::IProxy> manager_;
  mutable std::mutex mutex_;
  std::vector<Heard> heard_;
};

class ReleaseCheckDaemonTest : public ::testing::Test {
 protected:
  void start(const std::string& config, std::map<std::string, std::string> env = {}) {
    write_file(config_, config);
    env["NOTIFY_SOCKET"] = notify_.path();
    xpud_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{binary_path("xpud/xpud").string(), "--bus-address", bus_.address(),
                                 "--config", config_.string()},
        dir_.path() / "xpud.log", env);
    ASSERT_GE(notify_.wait_for("READY=1", 10s), 0) << xpud_->output();
    signals_ = std::make_unique<HealthSignals>(bus_.address());
  }

  void set_metric(unsigned index, const std::string& key, double value) {
    auto connection = sdbus::createSessionBusConnectionWithAddress(bus_.address());
    sdbus::createProxy(*connection, std::string(names::kBusName), std::string(names::kManagerPath))
        ->callMethod("SetMetric")
        .onInterface(std::string(names::kSimulatorInterface))
        .withArguments(index, key, value);
  }

  xpu::DeviceInfo device(unsigned index) {
    auto devices = client_.list_devices();
    if (!devices || devices->size() <= index) {
      ADD_FAILURE() << "no " << names::device_name(index) << ": "
                    << (devices ? "too few devices" : devices.error());
      return {};
    }
    return (*devices)[index];
  }

  // Waits for a snapshot taken `after` on the wall clock: xpud has read the cards since.
  bool sampled_since(std::chrono::system_clock::time_point after) {
    const auto usec =
        std::chrono::duration_cast<std::chrono::microseconds>(after.time_since_epoch()).count();
    return wait_until(
        [&] {
          auto snapshot = client_.get_metrics();
          return snapshot && static_cast<std::int64_t>(snapshot->timestamp_usec) > usec;
        },
        10s);
  }

  xpu::test::TempDir dir_;
  xpu::test::PrivateBus bus_;
  xpu::test::NotifySocket notify_{dir_.path() / "notify"};
  std::filesystem::path config_ = dir_.path() / "xpud.conf";
  std::unique_ptr<ChildProcess> xpud_;
  std::unique_ptr<HealthSignals> signals_;
  xpu::XpudClient client_{xpu::ClientOptions{bus_.address(), 2s}};
};

constexpr const char* kSimConfig =
    "[daemon]\nbackend = sim\n[sim]\ndevices = 4\n[sampling]\ninterval_ms = 100\n"
    "[release_check]\ntimeout_ms = 1500\n";

TEST_F(ReleaseCheckDaemonTest, SimCardKeepingMemoryAfterItsProcessLeftIsUnhealthyUntilReleased) {
  ASSERT_NO_FATAL_FAILURE(start(kSimConfig));
  // The simulated workload holds 2 GiB, then leaves the card without freeing it.
  set_metric(2, "memory_used_bytes", 2 * kGiB);
  const auto left = Clock::now();
  set_metric(2, "process_count", 0);

  const auto unhealthy = signals_->wait_for(1, 10s);
  ASSERT_TRUE(unhealthy) << xpud_->output();
  const std::string reason =
      "memory not released: 2048 MiB in use with no process 1500 ms after the last one left";
  EXPECT_EQ(unhealthy->device, names::device_path(2));
  EXPECT_EQ(unhealthy->health, "Unhealthy");
  EXPECT_EQ(unhealthy->reason, reason);
  // Not before the bound: the clock starts at the first reading without the process.
  EXPECT_GE(unhealthy->at - left, 1500ms);
  auto card = device(2);
  EXPECT_FALSE(card.healthy);
  EXPECT_EQ(card.health_reason, reason);
  EXPECT_EQ(card.health_reason_kind, "memory_not_released");
  EXPECT_TRUE(device(1).healthy);
  EXPECT_GE(notify_.wait_for("STATUS=4 devices, 3 healthy, backend sim", 5s), 0);
  EXPECT_NE(xpud_->output().find("xpu2: health: Unhealthy: " + reason), std::string::npos)
      << xpud_->output();

  // The memory comes back (a reset, the driver's late clean-up): Healthy again, at once.
  set_metric(2, "memory_used_bytes", 0);
  const auto healthy = signals_->wait_for(2, 10s);
  ASSERT_TRUE(healthy) << xpud_->output();
  EXPECT_EQ(healthy->device, names::device_path(2));
  EXPECT_EQ(healthy->health, "Healthy");
  EXPECT_EQ(healthy->reason, "");
  EXPECT_EQ(device(2).health_reason_kind, "");
  EXPECT_GE(notify_.wait_for("STATUS=4 devices, 4 healthy, backend sim", 5s), 0);

  // The simulation back in charge, its workload on the card again: nothing more to say.
  set_metric(2, "memory_used_bytes", std::nan(""));
  set_metric(2, "process_count", std::nan(""));
  ASSERT_TRUE(sampled_since(std::chrono::system_clock::now() + 2s));
  EXPECT_EQ(signals_->heard().size(), 2u);
  EXPECT_TRUE(device(2).healthy);
}

TEST_F(ReleaseCheckDaemonTest, ANewProcessBeforeTheBoundCancelsTheCheck) {
  ASSERT_NO_FATAL_FAILURE(start(kSimConfig));
  set_metric(1, "memory_used_bytes", 2 * kGiB);
  set_metric(1, "process_count", 0);
  set_metric(1, "process_count", 1);  // the next tenant, well within the bound
  ASSERT_TRUE(sampled_since(std::chrono::system_clock::now() + 3s));
  EXPECT_TRUE(signals_->heard().empty());
  EXPECT_TRUE(device(1).healthy);
}

TEST_F(ReleaseCheckDaemonTest, DisabledInTheConfigNothingIsCheckedUntilAReloadTurnsItOn) {
  ASSERT_NO_FATAL_FAILURE(start(std::string(kSimConfig) + "enabled = false\n"));
  set_metric(3, "memory_used_bytes", 2 * kGiB);
  set_metric(3, "process_count", 0);
  ASSERT_TRUE(sampled_since(std::chrono::system_clock::now() + 3s));
  EXPECT_TRUE(signals_->heard().empty());
  EXPECT_TRUE(device(3).healthy);

  // Turned on by a reload: the card is judged from then on.
  write_file(config_, kSimConfig);
  const auto reloaded = Clock::now();
  xpud_->signal(SIGHUP);
  const auto unhealthy = signals_->wait_for(1, 10s);
  ASSERT_TRUE(unhealthy) << xpud_->output();
  EXPECT_EQ(unhealthy->device, names::device_path(3));
  // The check did not see the process leave: it says how long it saw the card so.
  EXPECT_EQ(unhealthy->reason, "memory not released: 2048 MiB in use with no process for 1500 ms");
  EXPECT_GE(unhealthy->at - reloaded, 1500ms);
}

// The fake library plays the vendor's: the process list (xpumlDeviceGetComputeRunningProcesses)
// and the card's used memory (xpumlDeviceGetMemoryInfo) are two separate answers. xpud's own
// pid on the list (the vendor's sample lists the process that reads the cards) is no tenant.
TEST_F(ReleaseCheckDaemonTest, XpumlCardWhoseProcessLeftItsMemoryIsUnhealthyUntilItIsFreed) {
  const auto scenario = dir_.path() / "scenario";
  auto set_scenario = [&](const std::string& text) {
    write_file(dir_.path() / "scenario.tmp", text);
    std::filesystem::rename(dir_.path() / "scenario.tmp", scenario);
  };
  set_scenario("devices 2\n");
  ASSERT_NO_FATAL_FAILURE(start(
      "[daemon]\nbackend = xpuml\n[sampling]\ninterval_ms = 100\n[xpuml]\nlibrary = " FAKE_XPUML
      "\n[sysfs]\nroot = " +
          dir_.path().string() + "\n[release_check]\ntimeout_ms = 1000\n",
      {{"XPUML_FAKE_SCRIPT", scenario.string()}}));
  const std::string xpud_itself = "process " + std::to_string(xpud_->pid()) + " 0\n";
  set_scenario("devices 2\ndevice 1\nmemory_used 3GiB\nprocess 4242 3GiB 7\n" + xpud_itself);
  ASSERT_TRUE(wait_until(
      [&] {
        auto processes = client_.get_processes();
        return processes && processes->devices.size() == 2 &&
               processes->devices[1].processes.size() == 2;
      },
      5s));

  // The job is gone; its 3 GiB stay. Only xpud is left on the list.
  const auto left = Clock::now();
  set_scenario("devices 2\ndevice 1\nmemory_used 3GiB\n" + xpud_itself);
  const auto unhealthy = signals_->wait_for(1, 10s);
  ASSERT_TRUE(unhealthy) << xpud_->output();
  const std::string reason =
      "memory not released: 3072 MiB in use with no process 1 s after the last one left";
  EXPECT_EQ(unhealthy->device, names::device_path(1));
  EXPECT_EQ(unhealthy->reason, reason);
  EXPECT_GE(unhealthy->at - left, 1000ms);
  EXPECT_EQ(device(1).health_reason_kind, "memory_not_released");
  EXPECT_TRUE(device(0).healthy);
  EXPECT_NE(xpud_->output().find("xpu1: health: Unhealthy: " + reason), std::string::npos)
      << xpud_->output();

  set_scenario("devices 2\ndevice 1\nmemory_used 0\n" + xpud_itself);
  const auto healthy = signals_->wait_for(2, 10s);
  ASSERT_TRUE(healthy) << xpud_->output();
  EXPECT_EQ(healthy->health, "Healthy");
  EXPECT_TRUE(device(1).healthy);
}

}  // namespace
