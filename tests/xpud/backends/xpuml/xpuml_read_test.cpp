// read(): one card's metrics in base units, faults and read errors.
#include <chrono>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/names.h"
#include "tests/xpud/backends/xpuml/fake_xpuml_host.h"
#include "xpud/backends/xpuml/xpuml_backend.h"

namespace xpud {
namespace {

namespace metric = xpu::names::metric;
using ::testing::Contains;
using ::testing::Key;
using ::testing::Not;

class XpumlReadTest : public ::testing::Test {
 protected:
  // Loads the library on `scenario` and discovers its cards.
  void start(std::string_view scenario,
             const std::filesystem::path& library = test::fake_xpuml_library()) {
    host.write_scenario(scenario);
    auto loaded = make_xpuml_backend(library, host.sysfs_root());
    ASSERT_TRUE(loaded.ok()) << loaded.error();
    backend = std::move(*loaded);
    auto found = backend->discover();
    ASSERT_TRUE(found.ok()) << found.error();
    devices = *found;
  }

  DeviceReading read(std::size_t i) { return backend->read(devices.at(i)); }

  static std::string key(std::string_view name) { return std::string(name); }

  test::FakeXpumlHost host;
  std::unique_ptr<Backend> backend;
  std::vector<DeviceIdentity> devices;
};

TEST_F(XpumlReadTest, MetricsInBaseUnits) {
  ASSERT_NO_FATAL_FAILURE(start(R"(
devices 1
device 0
memory_total 32GiB
memory_used 8GiB
l3_total 64MiB
l3_used 16MiB
utilization 37
memory_utilization 25
temperature 55
power_mw 75500
clock_mhz 1300
processes 3
)"));
  auto reading = read(0);
  EXPECT_FALSE(reading.fault);
  EXPECT_FALSE(reading.read_error);
  std::map<std::string, double> expected = {
      {key(metric::kMemoryTotal), 34359738368.0},
      {key(metric::kMemoryUsed), 8589934592.0},
      {key(metric::kL3MemoryTotal), 67108864.0},
      {key(metric::kL3MemoryUsed), 16777216.0},
      {key(metric::kUtilization), 0.37},
      {key(metric::kMemoryUtilization), 0.25},
      {key(metric::kTemperature), 55.0},
      {key(metric::kPower), 75.5},
      {key(metric::kClock), 1.3e9},
      {key(metric::kProcessCount), 3.0},
  };
  EXPECT_EQ(reading.metrics, expected);
}

TEST_F(XpumlReadTest, AHundredProcessesOnOneCardAndNoneOnAnother) {
  // 100 records of 128 bytes, more than any fixed buffer xpud had (64 records of 32 bytes).
  ASSERT_NO_FATAL_FAILURE(start("devices 2\ndevice 0\nprocesses 100\n"));
  test::FakeXpumlCalls calls(test::fake_xpuml_library());
  auto busy = read(0);
  EXPECT_FALSE(busy.read_error);
  EXPECT_EQ(busy.metrics.at(key(metric::kProcessCount)), 100.0);
  ASSERT_TRUE(busy.processes);
  ASSERT_EQ(busy.processes->size(), 100u);
  for (unsigned i = 0; i < 100; ++i)
    EXPECT_EQ((*busy.processes)[i], (ProcessUsage{1000 + i, std::uint64_t{1} << 30})) << i;

  auto idle = read(1);
  EXPECT_EQ(idle.metrics.at(key(metric::kProcessCount)), 0.0);
  ASSERT_TRUE(idle.processes);
  EXPECT_TRUE(idle.processes->empty());

  // The next read starts from the count it saw: one question, not two.
  const unsigned before = calls.count("xpumlDeviceGetComputeRunningProcesses");
  EXPECT_EQ(read(0).processes.value_or(std::vector<ProcessUsage>{}).size(), 100u);
  EXPECT_EQ(calls.count("xpumlDeviceGetComputeRunningProcesses"), before + 1);
}

TEST_F(XpumlReadTest, ProcessRecordsAreReadWhole) {
  ASSERT_NO_FATAL_FAILURE(start(R"(
devices 1
device 0
process 4242 2GiB 7
process 4300 512MiB
process 4400 1MiB 9
)"));
  auto reading = read(0);
  EXPECT_EQ(reading.processes,
            (std::optional<std::vector<ProcessUsage>>{{{4242, std::uint64_t{2} << 30},
                                                       {4300, std::uint64_t{512} << 20},
                                                       {4400, std::uint64_t{1} << 20}}}));
}

TEST_F(XpumlReadTest, MetricsThatCannotBeReadAreLeftOut) {
  ASSERT_NO_FATAL_FAILURE(start(R"(
devices 2
device 0
fail xpumlDeviceGetPowerUsage NOT_SUPPORTED
fail xpumlDeviceGetClockInfo NO_DATA
fail xpumlDeviceGetUtilizationRates TIMEOUT
)"));
  auto reading = read(0);
  EXPECT_FALSE(reading.fault);
  EXPECT_FALSE(reading.read_error);
  EXPECT_THAT(reading.metrics, Not(Contains(Key(key(metric::kPower)))));
  EXPECT_THAT(reading.metrics, Not(Contains(Key(key(metric::kClock)))));
  EXPECT_THAT(reading.metrics, Not(Contains(Key(key(metric::kUtilization)))));
  EXPECT_THAT(reading.metrics, Not(Contains(Key(key(metric::kMemoryUtilization)))));
  EXPECT_EQ(reading.metrics.at(key(metric::kTemperature)), 40.0);
  EXPECT_EQ(reading.metrics.at(key(metric::kProcessCount)), 0.0);
  // The other card is untouched.
  EXPECT_EQ(read(1).metrics.size(), metric::kAll.size());
}

struct StateCase {
  const char* state;
  std::optional<std::string> fault;
};

class XpumlStateTest : public XpumlReadTest, public ::testing::WithParamInterface<StateCase> {};

TEST_P(XpumlStateTest, StateMapsToFault) {
  ASSERT_NO_FATAL_FAILURE(
      start(std::string("devices 1\ndevice 0\nstate ") + GetParam().state + "\n"));
  auto reading = read(0);
  EXPECT_EQ(reading.fault, GetParam().fault);
  EXPECT_FALSE(reading.read_error);
  // The card still answers, so its metrics are still worth showing.
  EXPECT_EQ(reading.metrics.at(key(metric::kTemperature)), 40.0);
}

INSTANTIATE_TEST_SUITE_P(
    States, XpumlStateTest,
    ::testing::Values(StateCase{"ERROR", "driver reports state ERROR (207)"},
                      StateCase{"IN_EXCEPTION", "driver reports state IN_EXCEPTION (208)"},
                      StateCase{"IN_RESET", "driver reports state IN_RESET (205)"},
                      StateCase{"207", "driver reports state ERROR (207)"},
                      StateCase{"RUNNING", std::nullopt}, StateCase{"UNUSED", std::nullopt},
                      StateCase{"42", std::nullopt}),
    [](const ::testing::TestParamInfo<StateCase>& info) {
      return std::string("State_") + info.param.state;
    });

TEST_F(XpumlReadTest, CardLostAfterDiscoveryIsAFault) {
  ASSERT_NO_FATAL_FAILURE(start("devices 2\n"));
  host.write_scenario("devices 2\ndevice 1\nlost\n");
  auto reading = read(1);
  EXPECT_EQ(reading.fault, "device lost");
  EXPECT_TRUE(reading.metrics.empty());
  EXPECT_FALSE(read(0).fault);
}

TEST_F(XpumlReadTest, LostCardStaysThroughRediscoveryAndReadsAsLost) {
  ASSERT_NO_FATAL_FAILURE(start("devices 2\n"));
  host.write_scenario("devices 2\ndevice 0\nlost\n");
  auto again = backend->discover();
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(*again, devices);
  EXPECT_EQ(backend->read(again->at(0)).fault, "device lost");
  EXPECT_FALSE(backend->read(again->at(1)).fault);
}

TEST_F(XpumlReadTest, LostFromAnyCallIsAFault) {
  ASSERT_NO_FATAL_FAILURE(
      start("devices 1\ndevice 0\nfail xpumlDeviceGetPowerUsage XPU_IS_LOST after 0\n"));
  auto reading = read(0);
  EXPECT_EQ(reading.fault, "device lost");
  EXPECT_TRUE(reading.metrics.empty());
}

TEST_F(XpumlReadTest, CardRemovedFromTheLibraryIsLost) {
  ASSERT_NO_FATAL_FAILURE(start("devices 2\n"));
  host.write_scenario("devices 1\n");
  EXPECT_EQ(read(1).fault, "device lost");
}

TEST_F(XpumlReadTest, EveryCallFailingIsAReadErrorWithTheFirstError) {
  ASSERT_NO_FATAL_FAILURE(start(R"(
devices 1
device 0
fail xpumlDeviceGetState TIMEOUT after 0
fail xpumlDeviceGetMemoryInfo NOT_SUPPORTED after 1
fail xpumlDeviceGetUtilizationRates TIMEOUT
fail xpumlDeviceGetTemperature TIMEOUT
fail xpumlDeviceGetPowerUsage TIMEOUT
fail xpumlDeviceGetClockInfo TIMEOUT
fail xpumlDeviceGetComputeRunningProcesses TIMEOUT
)"));
  auto reading = read(0);
  EXPECT_FALSE(reading.fault);
  EXPECT_TRUE(reading.metrics.empty());
  EXPECT_EQ(reading.read_error, "xpumlDeviceGetState(xpu0): TIMEOUT (10): fake libxpuml: error");
}

TEST_F(XpumlReadTest, FailureAfterNCalls) {
  ASSERT_NO_FATAL_FAILURE(
      start("devices 1\ndevice 0\nfail xpumlDeviceGetTemperature NO_DATA after 2\n"));
  EXPECT_THAT(read(0).metrics, Contains(Key(key(metric::kTemperature))));
  EXPECT_THAT(read(0).metrics, Contains(Key(key(metric::kTemperature))));
  EXPECT_THAT(read(0).metrics, Not(Contains(Key(key(metric::kTemperature)))));
}

TEST_F(XpumlReadTest, ImpossibleValuesAreDropped) {
  ASSERT_NO_FATAL_FAILURE(start(R"(
devices 2
device 0
memory_total 16GiB
memory_used 17GiB
l3_total 0
l3_used 0
utilization 101
memory_utilization 250
temperature 1000
power_mw 5000000
clock_mhz 0
processes 70000
device 1
memory_total 0xffffffffffffffff
memory_used 0
utilization 100
memory_utilization 0
temperature 150
power_mw 2000000
clock_mhz 10000
processes 65
)"));
  // Only the plausible total is left of card 0.
  EXPECT_EQ(read(0).metrics,
            (std::map<std::string, double>{{key(metric::kMemoryTotal), 17179869184.0}}));
  // The edges of the plausible ranges are kept.
  std::map<std::string, double> edges = {
      {key(metric::kL3MemoryTotal), 67108864.0},
      {key(metric::kL3MemoryUsed), 0.0},
      {key(metric::kUtilization), 1.0},
      {key(metric::kMemoryUtilization), 0.0},
      {key(metric::kTemperature), 150.0},
      {key(metric::kPower), 2000.0},
      {key(metric::kClock), 1e10},
      {key(metric::kProcessCount), 65.0},
  };
  EXPECT_EQ(read(1).metrics, edges);
}

TEST_F(XpumlReadTest, CardNotFromTheLastDiscoveryIsAReadError) {
  ASSERT_NO_FATAL_FAILURE(start("devices 1\n"));
  DeviceIdentity stranger = devices[0];
  stranger.index = 9;
  auto reading = backend->read(stranger);
  ASSERT_TRUE(reading.read_error);
  EXPECT_THAT(*reading.read_error, ::testing::HasSubstr("xpu9"));
  DeviceIdentity replaced = devices[0];
  replaced.uuid = "another-card";
  EXPECT_TRUE(backend->read(replaced).read_error);
}

TEST_F(XpumlReadTest, SlowCallIsStillCorrect) {
  ASSERT_NO_FATAL_FAILURE(
      start("devices 1\ndevice 0\ntemperature 61\ndelay xpumlDeviceGetTemperature 100\n"));
  auto started = std::chrono::steady_clock::now();
  auto reading = read(0);
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(100));
  EXPECT_EQ(reading.metrics.at(key(metric::kTemperature)), 61.0);
}

TEST_F(XpumlReadTest, ScenarioChangesReachALoadedLibrary) {
  ASSERT_NO_FATAL_FAILURE(start("devices 1\ndevice 0\ntemperature 45\n"));
  EXPECT_EQ(read(0).metrics.at(key(metric::kTemperature)), 45.0);
  host.write_scenario("devices 1\ndevice 0\ntemperature 71\nstate ERROR\n");
  auto reading = read(0);
  EXPECT_EQ(reading.metrics.at(key(metric::kTemperature)), 71.0);
  EXPECT_EQ(reading.fault, "driver reports state ERROR (207)");
}

TEST_F(XpumlReadTest, OldLibraryReadsTheSameMetrics) {
  ASSERT_NO_FATAL_FAILURE(
      start("devices 1\ndevice 0\nutilization 12\n", test::fake_xpuml_old_library()));
  auto reading = read(0);
  EXPECT_EQ(reading.metrics.size(), metric::kAll.size());
  EXPECT_EQ(reading.metrics.at(key(metric::kUtilization)), 0.12);
}

}  // namespace
}  // namespace xpud
