#include "tests/fakes/libxpuml/fake_scenario.h"

#include <array>
#include <charconv>
#include <cstdio>
#include <limits>
#include <optional>

#include "xpud/backends/xpuml/xpuml_return_codes.h"

namespace xpuml_fake {
namespace {

constexpr std::array<std::string_view, 28> kFunctions = {
    "xpumlInit",
    "xpumlShutdown",
    "xpumlSystemGetDriverVersion",
    "xpumlSystemGetXPUMLVersion",
    "xpumlDeviceGetCount",
    "xpumlDeviceGetHandleByIndex",
    "xpumlDeviceGetSerial",
    "xpumlDeviceGetPciInfo",
    "xpumlDeviceGetAttributes",
    "xpumlDeviceGetMemoryInfo",
    "xpumlDeviceGetUtilizationRates",
    "xpumlDeviceGetTemperature",
    "xpumlDeviceGetPowerUsage",
    "xpumlDeviceGetClockInfo",
    "xpumlDeviceGetState",
    "xpumlDeviceGetComputeRunningProcesses",
    "xpumlDeviceGetBoardId",
    "xpumlDeviceGetArchitecture",
    "xpumlDeviceGetHostVxpuMode",
    "xpumlDeviceSetSriovVfNum",
    "xpumlDeviceGetName",
    "xpumlDeviceGetMinorNumber",
    "xpumlDeviceGetId",
    "xpumlDeviceGetUUID",
    "xpumlDeviceCreateCxpuInstance",
    "xpumlDeviceSetCxpuInstanceMemoryLimit",
    "xpumlDeviceDestroyCxpuInstance",
    "xpumlErrorString",
};

std::string_view trim(std::string_view text) {
  constexpr std::string_view kBlank = " \t\r\n";
  auto first = text.find_first_not_of(kBlank);
  if (first == std::string_view::npos) return {};
  auto last = text.find_last_not_of(kBlank);
  return text.substr(first, last - first + 1);
}

std::vector<std::string_view> split(std::string_view text) {
  std::vector<std::string_view> words;
  while (true) {
    text = trim(text);
    if (text.empty()) return words;
    auto end = text.find_first_of(" \t");
    words.push_back(text.substr(0, end));
    if (end == std::string_view::npos) return words;
    text.remove_prefix(end);
  }
}

template <typename T>
std::optional<T> parse_integer(std::string_view text) {
  int base = 10;
  if (text.starts_with("0x") || text.starts_with("0X")) {
    base = 16;
    text.remove_prefix(2);
  }
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Bytes with an optional binary suffix: "4096", "64MiB", "32GiB".
std::optional<std::uint64_t> parse_bytes(std::string_view text) {
  constexpr std::array<std::pair<std::string_view, unsigned>, 4> kSuffixes = {
      {{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}}};
  unsigned shift = 0;
  for (auto [suffix, bits] : kSuffixes) {
    if (text.ends_with(suffix)) {
      text.remove_suffix(suffix.size());
      shift = bits;
      break;
    }
  }
  auto value = parse_integer<std::uint64_t>(text);
  if (!value || *value > (std::numeric_limits<std::uint64_t>::max() >> shift)) return std::nullopt;
  return *value << shift;
}

std::optional<int> parse_state(std::string_view text) {
  if (text == "UNUSED") return XPUML_DEVICE_STATE_UNUSED;
  if (text == "RUNNING") return XPUML_DEVICE_STATE_RUNNING;
  if (text == "IN_RESET") return XPUML_DEVICE_STATE_IN_RESET;
  if (text == "ERROR") return XPUML_DEVICE_STATE_ERROR;
  if (text == "IN_EXCEPTION") return XPUML_DEVICE_STATE_IN_EXCEPTION;
  return parse_integer<int>(text);
}

class Parser {
 public:
  xpu::Result<Scenario> run(std::string_view text) {
    unsigned number = 0;
    while (!text.empty()) {
      auto end = text.find('\n');
      std::string_view line = text.substr(0, end);
      text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
      ++number;
      if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
      line = trim(line);
      if (line.empty()) continue;
      if (auto error = parse_line(line))
        return xpu::Error{"line " + std::to_string(number) + ": " + *error};
    }
    return std::move(scenario_);
  }

 private:
  using LineError = std::optional<std::string>;

  LineError parse_line(std::string_view line) {
    auto words = split(line);
    std::string_view key = words[0];
    std::string_view rest = trim(line.substr(key.size()));
    if (rest == "\"\"") rest = {};
    const std::size_t args = words.size() - 1;

    if (key == "devices") {
      if (device_ != nullptr) return "\"devices\" must come before the first \"device\" block";
      auto count = args == 1 ? parse_integer<unsigned>(words[1]) : std::nullopt;
      if (!count || *count > kMaxDevices)
        return "\"devices\" needs a count of 0.." + std::to_string(kMaxDevices);
      scenario_.devices.clear();
      for (unsigned i = 0; i < *count; ++i) scenario_.devices.push_back(default_device(i));
      return std::nullopt;
    }
    if (key == "device") {
      auto index = args == 1 ? parse_integer<unsigned>(words[1]) : std::nullopt;
      if (!index) return "\"device\" needs an index";
      if (*index >= scenario_.devices.size())
        return "device " + std::to_string(*index) + " beyond \"devices " +
               std::to_string(scenario_.devices.size()) + "\"";
      device_ = &scenario_.devices[*index];
      return std::nullopt;
    }
    if (key == "driver_version") return set_text(scenario_.driver_version, rest);
    if (key == "xpuml_version") return set_text(scenario_.xpuml_version, rest);
    if (key == "fail") return parse_fail(words);
    if (key == "delay") return parse_delay(words);

    if (device_ == nullptr) return "\"" + std::string(key) + "\" outside a \"device N\" block";
    FakeDevice& d = *device_;
    if (key == "serial") return set_text(d.serial, rest);
    if (key == "uuid") return set_text(d.uuid, rest);
    if (key == "name") return set_text(d.name, rest);
    if (key == "bus_id") return set_text(d.bus_id, rest);
    if (key == "lost") {
      if (args != 0) return "\"lost\" takes no value";
      d.lost = true;
      return std::nullopt;
    }
    if (key == "sn") {
      auto high = args == 2 ? parse_integer<std::uint64_t>(words[1]) : std::nullopt;
      auto low = args == 2 ? parse_integer<std::uint64_t>(words[2]) : std::nullopt;
      if (!high || !low) return "\"sn\" needs two 64-bit numbers";
      d.sn[0] = *high;
      d.sn[1] = *low;
      return std::nullopt;
    }
    if (key == "process") {
      // process HOST_PID MEMORY [PID_IN_ITS_NAMESPACE]
      auto host_pid = args >= 2 ? parse_integer<unsigned>(words[1]) : std::nullopt;
      auto memory = args >= 2 ? parse_bytes(words[2]) : std::nullopt;
      auto own_pid = args == 3 ? parse_integer<unsigned>(words[3]) : host_pid;
      if (args < 2 || args > 3 || !host_pid || !memory || !own_pid)
        return "expected \"process HOST_PID MEMORY [PID]\"";
      d.process_list.push_back(process_record(*own_pid, *memory, *host_pid));
      d.processes = static_cast<unsigned>(d.process_list.size());
      return std::nullopt;
    }
    if (args != 1) return "\"" + std::string(key) + "\" needs exactly one value";
    std::string_view value = words[1];
    if (key == "state") return set(d.state, parse_state(value), key, value);
    if (key == "board") return set(d.board, parse_integer<int>(value), key, value);
    if (key == "arch") return set(d.arch, parse_integer<int>(value), key, value);
    if (key == "id") return set(d.physical_id, parse_integer<int>(value), key, value);
    if (key == "model_id") {
      auto model = parse_integer<int>(value);
      if (!model) return "bad value \"" + std::string(value) + "\" for \"model_id\"";
      d.model_id = *model;
      return std::nullopt;
    }
    if (key == "vxpu_mode") return set(d.vxpu_mode, parse_integer<int>(value), key, value);
    if (key == "memory_total") return set(d.memory_total, parse_bytes(value), key, value);
    if (key == "memory_used") return set(d.memory_used, parse_bytes(value), key, value);
    if (key == "l3_total") return set(d.l3_total, parse_bytes(value), key, value);
    if (key == "l3_used") return set(d.l3_used, parse_bytes(value), key, value);
    const std::array<std::pair<std::string_view, unsigned*>, 10> unsigned_fields = {{
        {"minor", &d.minor},
        {"max_vfs", &d.max_vfs},
        {"pci_device_id", &d.pci_device_id},
        {"pci_subsystem_id", &d.pci_subsystem_id},
        {"utilization", &d.utilization},
        {"memory_utilization", &d.memory_utilization},
        {"temperature", &d.temperature},
        {"power_mw", &d.power_mw},
        {"clock_mhz", &d.clock_mhz},
        {"processes", &d.processes},
    }};
    for (auto [name, field] : unsigned_fields)
      if (key == name) return set(*field, parse_integer<unsigned>(value), key, value);
    return "unknown key \"" + std::string(key) + "\"";
  }

  static LineError set_text(std::string& field, std::string_view value) {
    field = std::string(value);
    return std::nullopt;
  }

  template <typename T>
  static LineError set(T& field, std::optional<T> parsed, std::string_view key,
                       std::string_view value) {
    if (!parsed) return "bad value \"" + std::string(value) + "\" for \"" + std::string(key) + "\"";
    field = *parsed;
    return std::nullopt;
  }

  Injections& injections() {
    return device_ != nullptr ? device_->injections : scenario_.injections;
  }

  LineError parse_fail(const std::vector<std::string_view>& words) {
    if (words.size() != 3 && !(words.size() == 5 && words[3] == "after"))
      return "expected \"fail FUNCTION CODE [after N]\"";
    if (!is_library_function(words[1])) return "unknown function \"" + std::string(words[1]) + "\"";
    auto code = xpud::xpuml::parse_return_code(words[2]);
    if (!code) return "unknown return code \"" + std::string(words[2]) + "\"";
    Failure failure;
    failure.code = *code;
    if (words.size() == 5) {
      auto after = parse_integer<unsigned>(words[4]);
      if (!after) return "bad call count \"" + std::string(words[4]) + "\"";
      failure.after = *after;
    }
    injections().failures[std::string(words[1])] = failure;
    return std::nullopt;
  }

  LineError parse_delay(const std::vector<std::string_view>& words) {
    if (words.size() != 3) return "expected \"delay FUNCTION MILLISECONDS\"";
    if (!is_library_function(words[1])) return "unknown function \"" + std::string(words[1]) + "\"";
    auto ms = parse_integer<unsigned>(words[2]);
    if (!ms) return "bad delay \"" + std::string(words[2]) + "\"";
    injections().delays_ms[std::string(words[1])] = *ms;
    return std::nullopt;
  }

  Scenario scenario_;
  FakeDevice* device_ = nullptr;
};

}  // namespace

FakeDevice default_device(unsigned index) {
  FakeDevice d;
  char text[64];
  std::snprintf(text, sizeof text, "02K00FAKE%04u", index);
  d.serial = text;
  std::snprintf(text, sizeof text, "fa4e0000-0000-4000-8000-%012x", index);
  d.uuid = text;
  d.name = "R200";
  d.minor = 2 * index;
  d.physical_id = static_cast<int>(index);
  std::snprintf(text, sizeof text, "%08X:%02X:%02X.%01X", 0u, 0x3bu + index, 0u, 0u);
  d.bus_id = text;
  d.pci_device_id = 0x3684u << 16 | 0x1d22u;
  d.pci_subsystem_id = 1u << 16 | 2u;
  d.board = 100;
  d.arch = 2;
  d.sn[0] = 0x1d22000000000000ULL + index;
  d.sn[1] = 0;
  d.memory_total = std::uint64_t{32} << 30;
  d.l3_total = std::uint64_t{64} << 20;
  d.temperature = 40;
  d.power_mw = 60'000;
  d.clock_mhz = 1300;
  return d;
}

int model_id_for_board(int board) {
  switch (board) {
    case XPUML_DEVICE_BOARD_KL1_K100:
      return XPUML_DEVICE_MODEL_KL1_K100;
    case XPUML_DEVICE_BOARD_KL1_K200:
      return XPUML_DEVICE_MODEL_KL1_K200;
    case XPUML_DEVICE_BOARD_KL2_R200:
      return XPUML_DEVICE_MODEL_KL2_R200;
    case XPUML_DEVICE_BOARD_KL2_R300:
      return XPUML_DEVICE_MODEL_KL2_R300;
    case XPUML_DEVICE_BOARD_KL2_R200_8F:
      return XPUML_DEVICE_MODEL_KL2_R200_8F;
    default:
      return XPUML_DEVICE_MODEL_UNKNOWN;
  }
}

xpumlProcessInfo_t process_record(unsigned pid, std::uint64_t used_global, unsigned root_ns_pid) {
  xpumlProcessInfo_t record{};
  record.pid = pid;
  record.usedGlobalMemory = used_global;
  record.root_ns_pid = root_ns_pid;
  return record;
}

bool has_sriov(const FakeDevice& device) {
  return device.max_vfs != 0 && device.max_vfs != XPUML_VALUE_NOT_AVAILABLE_UNSIGNED;
}

xpu::Result<Scenario> parse_scenario(std::string_view text) {
  return Parser{}.run(text);
}

bool is_library_function(std::string_view name) {
  for (auto function : kFunctions)
    if (function == name) return true;
  return false;
}

}  // namespace xpuml_fake
