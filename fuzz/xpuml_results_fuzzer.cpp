// How the xpuml backend decodes what libxpuml returns (xpud/backends/xpuml/xpuml_backend.cpp):
// return codes, the structs it fills (PCI info with its bus id text, attributes, memory,
// utilisation, process lists) and the text it writes into our buffers (serial, name, UUID,
// versions, error strings). A stand-in library answers every call from the input
// (FuzzedDataProvider): a return code, then the bytes of whatever the call fills. The backend
// discovers twice and reads every card; what it publishes must be usable as it promises.
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>

#include "fuzz/fuzz_support.h"
#include "xpud/backends/device_uuid.h"
#include "xpud/backends/pci_ids.h"
#include "xpud/backends/xpuml/xpuml_backend.h"
#include "xpud/backends/xpuml/xpuml_library.h"
#include "xpud/backends/xpuml/xpuml_return_codes.h"

namespace {

using xpu::fuzz::check;

// The library's answers for the input being run. The library's functions are plain C function
// pointers without a context argument, so the stand-ins can only find the input through a
// variable of the file; it is set and cleared around each input, and libFuzzer runs one at a time.
FuzzedDataProvider* answers = nullptr;

xpumlReturn_t next_code() {
  // Mostly success, so that the fills get decoded; otherwise any code, known or not.
  if (answers->remaining_bytes() == 0) return XPUML_ERROR_UNKNOWN;
  if (answers->ConsumeIntegralInRange<int>(0, 3) != 0) return XPUML_SUCCESS;
  if (answers->ConsumeBool()) return static_cast<xpumlReturn_t>(answers->ConsumeIntegral<int>());
  const auto& code = xpud::xpuml::kReturnCodes[answers->ConsumeIntegralInRange<std::size_t>(
      0, xpud::xpuml::kReturnCodes.size() - 1)];
  return code.code;
}

// Fills `size` bytes at `out` from the input (zeros once it runs out).
void fill(void* out, std::size_t size) {
  std::memset(out, 0, size);
  const auto bytes = answers->ConsumeBytes<std::uint8_t>(size);
  if (!bytes.empty()) std::memcpy(out, bytes.data(), bytes.size());
}

template <typename T>
xpumlReturn_t answer(T* out) {
  const xpumlReturn_t code = next_code();
  fill(out, sizeof *out);
  return code;
}

// Text as a library may write it: any bytes, terminated or not, within the buffer it was given.
xpumlReturn_t answer_text(char* buffer, unsigned length) {
  const xpumlReturn_t code = next_code();
  fill(buffer, answers->ConsumeIntegralInRange<unsigned>(0, length));
  return code;
}

xpumlReturn_t init() {
  return XPUML_SUCCESS;
}
xpumlReturn_t shutdown() {
  return XPUML_SUCCESS;
}
xpumlReturn_t driver_version(char* text, unsigned length) {
  return answer_text(text, length);
}
xpumlReturn_t device_count(unsigned* count) {
  const xpumlReturn_t code = next_code();
  // A handful of cards, or any count at all (the backend refuses more than 4096 at once): a
  // count in the thousands would only spend the input on cards that find no answers left.
  *count = answers->ConsumeBool() ? answers->ConsumeIntegral<unsigned>()
                                  : answers->ConsumeIntegralInRange<unsigned>(0, 16);
  return code;
}
xpumlReturn_t handle_by_index(unsigned index, xpumlDevice_t* device) {
  device->opaque = reinterpret_cast<void*>(static_cast<std::uintptr_t>(index) + 1);
  return next_code();
}
xpumlReturn_t serial(xpumlDevice_t, char* text, unsigned length) {
  return answer_text(text, length);
}
xpumlReturn_t pci_info(xpumlDevice_t, xpumlPciInfo_t* pci) {
  return answer(pci);
}
xpumlReturn_t attributes(xpumlDevice_t, xpumlDeviceAttributes_t* out) {
  return answer(out);
}
xpumlReturn_t memory_info(xpumlDevice_t, xpumlMemory_t* out) {
  return answer(out);
}
xpumlReturn_t utilization(xpumlDevice_t, xpumlUtilization_t* out) {
  return answer(out);
}
xpumlReturn_t temperature(xpumlDevice_t, int, unsigned* out) {
  return answer(out);
}
xpumlReturn_t power(xpumlDevice_t, unsigned* out) {
  return answer(out);
}
xpumlReturn_t clock(xpumlDevice_t, int, unsigned* out) {
  return answer(out);
}
xpumlReturn_t state(xpumlDevice_t, int* out) {
  return answer(out);
}
xpumlReturn_t processes(xpumlDevice_t, unsigned* count, xpumlProcessInfo_t* infos) {
  const unsigned slots = *count;
  const xpumlReturn_t code = next_code();
  // Any count, but entries only within the slots offered (what the library may touch).
  *count = answers->ConsumeIntegral<unsigned>();
  fill(infos, sizeof(xpumlProcessInfo_t) * std::min(slots, *count));
  return code;
}
xpumlReturn_t vxpu_mode(xpumlDevice_t, int* out) {
  return answer(out);
}
xpumlReturn_t name(xpumlDevice_t, char* text, unsigned length) {
  return answer_text(text, length);
}
xpumlReturn_t minor(xpumlDevice_t, unsigned* out) {
  return answer(out);
}
xpumlReturn_t physical_id(xpumlDevice_t, int* out) {
  return answer(out);
}
xpumlReturn_t uuid(xpumlDevice_t, char* text, unsigned length) {
  return answer_text(text, length);
}
const char* error_string(xpumlReturn_t) {
  // A library's own text: NUL-terminated (its contract), otherwise anything.
  static std::string text;
  text = answers->ConsumeRandomLengthString(300);
  return text.c_str();
}

xpud::xpuml::Symbols stand_in_symbols() {
  xpud::xpuml::Symbols s;
  s.init.fn = init;
  s.shutdown.fn = shutdown;
  s.system_get_driver_version.fn = driver_version;
  s.device_get_count.fn = device_count;
  s.device_get_handle_by_index.fn = handle_by_index;
  s.device_get_serial.fn = serial;
  s.device_get_pci_info.fn = pci_info;
  s.device_get_attributes.fn = attributes;
  s.device_get_memory_info.fn = memory_info;
  s.device_get_utilization_rates.fn = utilization;
  s.device_get_temperature.fn = temperature;
  s.device_get_power_usage.fn = power;
  s.device_get_clock_info.fn = clock;
  s.device_get_state.fn = state;
  s.device_get_compute_running_processes.fn = processes;
  s.device_get_host_vxpu_mode.fn = vxpu_mode;
  s.device_get_name.fn = name;
  s.device_get_minor_number.fn = minor;
  s.device_get_id.fn = physical_id;
  s.device_get_uuid.fn = uuid;
  s.error_string.fn = error_string;
  return s;
}

bool printable(const std::string& text) {
  for (char c : text)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) return false;
  return true;
}

void check_identities(const std::vector<xpud::DeviceIdentity>& devices) {
  std::set<std::string> uuids;
  std::set<unsigned> indices;
  for (const auto& device : devices) {
    check(xpud::is_usable_device_uuid(device.uuid), "unusable UUID published", device.uuid);
    check(uuids.insert(device.uuid).second, "UUID published twice", device.uuid);
    check(indices.insert(device.index).second, "index published twice");
    check(xpud::pci::normalize_bus_id(device.pci_bus_id) == device.pci_bus_id,
          "bus id not normalised", device.pci_bus_id);
    check(printable(device.serial) && device.serial.size() <= xpud::kMaxDeviceUuidLength, "serial",
          device.serial);
    check(!device.model.empty() && printable(device.model), "model", device.model);
    check(device.numa_node >= -1, "NUMA node");
  }
}

void check_reading(const xpud::DeviceReading& reading) {
  for (const auto& [key, value] : reading.metrics)
    check(std::isfinite(value) && value >= 0, "a metric that is not finite and not negative", key);
  if (reading.processes)
    for (const auto& process : *reading.processes) check(process.pid != 0, "a process without PID");
  for (const auto* text : {&reading.fault, &reading.read_error})
    if (*text) check(printable(**text), "a message with a non-printable byte", **text);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  xpu::fuzz::quiet_logging();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // No sysfs: every NUMA node reads as unknown.
  static const xpu::fuzz::ScratchDirectory sysfs_root("xpuml-sysfs");
  FuzzedDataProvider input(data, size);
  answers = &input;
  {
    auto backend = xpud::make_xpuml_backend(
        xpud::xpuml::Library::from_symbols("libxpuml-stand-in.so.1", stand_in_symbols()),
        sysfs_root.path());
    check(printable(backend->driver_version()), "driver version");
    for (int pass = 0; pass < 2 && input.remaining_bytes() > 0; ++pass) {
      auto devices = backend->discover();
      if (!devices) {
        check(printable(devices.error()), "discovery error", devices.error());
        continue;
      }
      check_identities(*devices);
      for (const auto& device : *devices) check_reading(backend->read(device));
    }
  }
  answers = nullptr;
  return 0;
}
