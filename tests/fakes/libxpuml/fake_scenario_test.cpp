// The fake libxpuml's scenario format: what test authors write and the errors they get.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/fakes/libxpuml/fake_scenario.h"

namespace xpuml_fake {
namespace {

using ::testing::HasSubstr;

TEST(FakeScenario, DevicesGetRealisticDefaults) {
  auto scenario = parse_scenario("devices 2\n");
  ASSERT_TRUE(scenario.ok()) << scenario.error();
  ASSERT_EQ(scenario->devices.size(), 2u);
  const FakeDevice& d = scenario->devices[1];
  EXPECT_EQ(d.serial, "02K00FAKE0001");
  EXPECT_EQ(d.bus_id, "00000000:3C:00.0");
  EXPECT_EQ(d.minor, 2u);  // the driver hands minors out in steps of two
  EXPECT_EQ(d.physical_id, 1);
  EXPECT_EQ(d.board, 100);
  EXPECT_EQ(model_id_for_board(d.board), XPUML_DEVICE_MODEL_KL2_R200);
  EXPECT_EQ(model_id_for_board(XPUML_DEVICE_BOARD_KL1_K200), XPUML_DEVICE_MODEL_KL1_K200);
  EXPECT_FALSE(d.model_id);
  EXPECT_EQ(d.max_vfs, XPUML_VALUE_NOT_AVAILABLE_UNSIGNED);
  EXPECT_EQ(d.memory_total, std::uint64_t{32} << 30);
  EXPECT_EQ(d.state, XPUML_DEVICE_STATE_RUNNING);
  EXPECT_FALSE(d.lost);
}

TEST(FakeScenario, DeviceBlocksOverrideFieldsAndScopeInjections) {
  auto scenario = parse_scenario(R"(
# two cards; the second one is in trouble
devices 2
driver_version 9.9.9
fail xpumlDeviceGetCount TIMEOUT after 3
delay xpumlDeviceGetState 20
device 1
serial  SN 42   # trailing comment
bus_id 00000000:AF:00.0
memory_used 1GiB
l3_total 64MiB
state IN_EXCEPTION
pci_device_id 0x36851d22
uuid ""
lost
fail xpumlDeviceGetTemperature XPUML_ERROR_XPU_IS_LOST
)");
  ASSERT_TRUE(scenario.ok()) << scenario.error();
  EXPECT_EQ(scenario->driver_version, "9.9.9");
  EXPECT_EQ(scenario->injections.failures.at("xpumlDeviceGetCount").code, XPUML_ERROR_TIMEOUT);
  EXPECT_EQ(scenario->injections.failures.at("xpumlDeviceGetCount").after, 3u);
  EXPECT_EQ(scenario->injections.delays_ms.at("xpumlDeviceGetState"), 20u);
  const FakeDevice& d = scenario->devices[1];
  EXPECT_EQ(d.serial, "SN 42");
  EXPECT_EQ(d.bus_id, "00000000:AF:00.0");
  EXPECT_EQ(d.memory_used, std::uint64_t{1} << 30);
  EXPECT_EQ(d.l3_total, std::uint64_t{64} << 20);
  EXPECT_EQ(d.state, XPUML_DEVICE_STATE_IN_EXCEPTION);
  EXPECT_EQ(d.pci_device_id, 0x36851d22u);
  EXPECT_EQ(d.uuid, "");
  EXPECT_TRUE(d.lost);
  EXPECT_EQ(d.injections.failures.at("xpumlDeviceGetTemperature").code, XPUML_ERROR_XPU_IS_LOST);
  EXPECT_TRUE(scenario->devices[0].injections.failures.empty());
}

TEST(FakeScenario, ErrorsNameTheLine) {
  struct Case {
    const char* text;
    const char* error;
  };
  for (const Case& c : {
           Case{"devices 1\nbogus 3\n", "line 2: "},
           Case{"temperature 3\n", "line 1: \"temperature\" outside a \"device N\" block"},
           Case{"devices 1\ndevice 1\n", "line 2: device 1 beyond \"devices 1\""},
           Case{"devices 1\ndevice 0\ndevices 2\n", "line 3: \"devices\" must come before"},
           Case{"devices 999\n", "line 1: \"devices\" needs a count"},
           Case{"devices 1\ndevice 0\ntemperature hot\n", "line 3: bad value \"hot\""},
           Case{"devices 1\ndevice 0\nmemory_total 99999999999TiB\n", "line 3: bad value"},
           Case{"fail xpumlDeviceGetTemprature TIMEOUT\n", "line 1: unknown function"},
           Case{"fail xpumlInit SOMETIMES\n", "line 1: unknown return code \"SOMETIMES\""},
           Case{"fail xpumlInit TIMEOUT before 3\n", "line 1: expected \"fail FUNCTION CODE"},
           Case{"delay xpumlInit soon\n", "line 1: bad delay \"soon\""},
           Case{"devices 1\ndevice 0\nlost now\n", "line 3: \"lost\" takes no value"},
       }) {
    auto scenario = parse_scenario(c.text);
    ASSERT_FALSE(scenario.ok()) << c.text;
    EXPECT_THAT(scenario.error(), HasSubstr(c.error)) << c.text;
  }
}

TEST(FakeScenario, ProcessLinesListProcessesAsWritten) {
  auto scenario = parse_scenario("devices 1\ndevice 0\nprocess 4242 2GiB 7\nprocess 4300 512MiB\n");
  ASSERT_TRUE(scenario.ok()) << scenario.error();
  const FakeDevice& d = scenario->devices[0];
  ASSERT_EQ(d.process_list.size(), 2u);
  EXPECT_EQ(d.processes, 2u);
  EXPECT_EQ(d.process_list[0].root_ns_pid, 4242u);
  EXPECT_EQ(d.process_list[0].pid, 7u);
  EXPECT_EQ(d.process_list[0].usedGlobalMemory, std::uint64_t{2} << 30);
  EXPECT_EQ(d.process_list[1].pid, 4300u);
  auto bad = parse_scenario("devices 1\ndevice 0\nprocess 4242\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error(), HasSubstr("line 3"));
  EXPECT_THAT(bad.error(), HasSubstr("process HOST_PID MEMORY [PID]"));
}

TEST(FakeScenario, PhysicalIdsAndModelIdsAreSetPerDevice) {
  auto scenario = parse_scenario("devices 2\ndevice 0\nid 7\nmodel_id 201\ndevice 1\nid -1\n");
  ASSERT_TRUE(scenario.ok()) << scenario.error();
  EXPECT_EQ(scenario->devices[0].physical_id, 7);
  EXPECT_EQ(scenario->devices[0].model_id, 201);
  EXPECT_EQ(scenario->devices[1].physical_id, -1);  // impossible values pass, for xpud to reject
  EXPECT_FALSE(parse_scenario("devices 1\ndevice 0\nid seven\n").ok());
  EXPECT_TRUE(is_library_function("xpumlDeviceGetId"));
}

TEST(FakeScenario, EmptyScenarioHasNoDevices) {
  auto scenario = parse_scenario("# nothing\n\n");
  ASSERT_TRUE(scenario.ok()) << scenario.error();
  EXPECT_TRUE(scenario->devices.empty());
}

}  // namespace
}  // namespace xpuml_fake
