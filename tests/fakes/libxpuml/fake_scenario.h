// The scenario the fake libxpuml plays: devices, their readings, and injected failures and
// delays. Parsed from the text format documented in README.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "xpud/backends/xpuml/xpuml_api.h"

namespace xpuml_fake {

// Most devices a scenario may declare (the fake hands out one handle slot per device).
inline constexpr unsigned kMaxDevices = 256;

// "fail FUNCTION CODE [after N]": the first N calls succeed, later ones return `code`.
struct Failure {
  xpumlReturn_t code = XPUML_SUCCESS;
  unsigned after = 0;
  unsigned calls = 0;  // calls seen since the scenario was loaded
};

// Injected behaviour of library functions, by function name.
struct Injections {
  std::map<std::string, Failure, std::less<>> failures;
  std::map<std::string, unsigned, std::less<>> delays_ms;
};

struct FakeDevice {
  std::string serial;
  std::string uuid;
  std::string name;
  unsigned minor = 0;             // the driver hands minors out in steps of two: 2 * i by default
  int physical_id = 0;            // xpumlDeviceGetId: the /dev/xpuN number; i by default
  std::string bus_id;             // as the library formats it: "%08X:%02X:%02X.%01X"
  unsigned pci_device_id = 0;     // device << 16 | vendor
  unsigned pci_subsystem_id = 0;  // subsystem device << 16 | subsystem vendor
  int board = 0;
  std::optional<int> model_id;  // attributes.modelId; unset: the board's (model_id_for_board)
  int arch = 0;
  std::uint64_t sn[2] = {0, 0};
  std::uint64_t memory_total = 0;  // bytes
  std::uint64_t memory_used = 0;
  std::uint64_t l3_total = 0;
  std::uint64_t l3_used = 0;
  unsigned utilization = 0;         // percent
  unsigned memory_utilization = 0;  // percent
  unsigned temperature = 0;         // degrees C
  unsigned power_mw = 0;
  unsigned clock_mhz = 0;
  int state = XPUML_DEVICE_STATE_RUNNING;
  unsigned processes = 0;
  // "process" lines: listed as written. Without any, "processes N" lists N made-up entries.
  std::vector<xpumlProcessInfo_t> process_list;
  int vxpu_mode = XPUML_HOST_VXPU_NON_SRIOV;
  // attributes.maxVFCount: "not available" (all ones) where the board has none, as go-xpuml's
  // README sample shows for a K200; 0 means none too.
  unsigned max_vfs = XPUML_VALUE_NOT_AVAILABLE_UNSIGNED;
  bool lost = false;  // every call on this device returns XPU_IS_LOST
  Injections injections;
};

struct Scenario {
  std::string driver_version = "5.0.21.21";
  std::string xpuml_version = "5.0.21";
  std::vector<FakeDevice> devices;
  Injections injections;  // apply to every call of the function, whatever the device
};

// attributes.modelId of a board enum value (the header's model enum): K100 1, K200 0, R200 2,
// R300 3, R200-8F 4, otherwise unknown (9999).
int model_id_for_board(int board);

// One process record (128 bytes, reserved fields zero).
xpumlProcessInfo_t process_record(unsigned pid, std::uint64_t used_global, unsigned root_ns_pid);

// Whether a device takes virtual functions: maxVFCount neither 0 nor "not available".
bool has_sriov(const FakeDevice& device);

// A realistic device for index i: an R200 at bus 0x3b + i with 32 GiB, idle and cool, physical
// id i, minor 2 * i.
FakeDevice default_device(unsigned index);

// Parses a scenario; errors name the line and what is wrong with it.
xpu::Result<Scenario> parse_scenario(std::string_view text);

// Whether `name` is a function the fake exports (fail/delay lines must name one).
bool is_library_function(std::string_view name);

}  // namespace xpuml_fake
