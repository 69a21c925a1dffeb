// libxpuml.so.1 loaded with dlopen: the handle, the resolved symbol table, xpumlInit on open and
// xpumlShutdown on destruction, and error messages for every return code.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "xpud/backends/xpuml/xpuml_api.h"

namespace xpud::xpuml {

// Owns a dlopen handle.
class DlHandle {
 public:
  DlHandle() = default;
  explicit DlHandle(void* handle) : handle_(handle) {}
  ~DlHandle() { reset(); }
  DlHandle(DlHandle&& other) noexcept;
  DlHandle& operator=(DlHandle&& other) noexcept;
  DlHandle(const DlHandle&) = delete;
  DlHandle& operator=(const DlHandle&) = delete;

  void* get() const { return handle_; }
  void reset(void* handle = nullptr);

 private:
  void* handle_ = nullptr;
};

// One library function: its address (null when an optional symbol is absent) and its name,
// which every error message about it carries.
template <typename Fn>
struct Function {
  Fn fn = nullptr;
  std::string_view name;
  bool available() const { return fn != nullptr; }
};

struct Symbols {
  // Required: a library without any of these is too old (or not libxpuml).
  Function<decltype(&::xpumlInit)> init{nullptr, "xpumlInit"};
  Function<decltype(&::xpumlShutdown)> shutdown{nullptr, "xpumlShutdown"};
  Function<decltype(&::xpumlSystemGetDriverVersion)> system_get_driver_version{
      nullptr, "xpumlSystemGetDriverVersion"};
  Function<decltype(&::xpumlDeviceGetCount)> device_get_count{nullptr, "xpumlDeviceGetCount"};
  Function<decltype(&::xpumlDeviceGetHandleByIndex)> device_get_handle_by_index{
      nullptr, "xpumlDeviceGetHandleByIndex"};
  Function<decltype(&::xpumlDeviceGetSerial)> device_get_serial{nullptr, "xpumlDeviceGetSerial"};
  Function<decltype(&::xpumlDeviceGetPciInfo)> device_get_pci_info{nullptr,
                                                                   "xpumlDeviceGetPciInfo"};
  Function<decltype(&::xpumlDeviceGetAttributes)> device_get_attributes{nullptr,
                                                                        "xpumlDeviceGetAttributes"};
  Function<decltype(&::xpumlDeviceGetMemoryInfo)> device_get_memory_info{
      nullptr, "xpumlDeviceGetMemoryInfo"};
  Function<decltype(&::xpumlDeviceGetUtilizationRates)> device_get_utilization_rates{
      nullptr, "xpumlDeviceGetUtilizationRates"};
  Function<decltype(&::xpumlDeviceGetTemperature)> device_get_temperature{
      nullptr, "xpumlDeviceGetTemperature"};
  Function<decltype(&::xpumlDeviceGetPowerUsage)> device_get_power_usage{
      nullptr, "xpumlDeviceGetPowerUsage"};
  Function<decltype(&::xpumlDeviceGetClockInfo)> device_get_clock_info{nullptr,
                                                                       "xpumlDeviceGetClockInfo"};
  Function<decltype(&::xpumlDeviceGetState)> device_get_state{nullptr, "xpumlDeviceGetState"};
  Function<decltype(&::xpumlDeviceGetComputeRunningProcesses)> device_get_compute_running_processes{
      nullptr, "xpumlDeviceGetComputeRunningProcesses"};
  Function<decltype(&::xpumlDeviceGetHostVxpuMode)> device_get_host_vxpu_mode{
      nullptr, "xpumlDeviceGetHostVxpuMode"};

  // Optional: only newer libraries export these.
  Function<decltype(&::xpumlDeviceGetName)> device_get_name{nullptr, "xpumlDeviceGetName"};
  Function<decltype(&::xpumlDeviceGetMinorNumber)> device_get_minor_number{
      nullptr, "xpumlDeviceGetMinorNumber"};
  // The physical id, which names the card (/dev/xpu<id>).
  Function<decltype(&::xpumlDeviceGetId)> device_get_id{nullptr, "xpumlDeviceGetId"};
  // No public header declares it (it is commented out in all of them); kept in case a library
  // exports it.
  Function<decltype(&::xpumlDeviceGetUUID)> device_get_uuid{nullptr, "xpumlDeviceGetUUID"};
  Function<decltype(&::xpumlErrorString)> error_string{nullptr, "xpumlErrorString"};
  // Optional: without it, virtual functions are set through sysfs sriov_numvfs.
  Function<decltype(&::xpumlDeviceSetSriovVfNum)> device_set_sriov_vf_num{
      nullptr, "xpumlDeviceSetSriovVfNum"};
  // Optional, all three or none used: cXPU instances (CreateInstance on the bus).
  Function<decltype(&::xpumlDeviceCreateCxpuInstance)> device_create_cxpu_instance{
      nullptr, "xpumlDeviceCreateCxpuInstance"};
  Function<decltype(&::xpumlDeviceSetCxpuInstanceMemoryLimit)>
      device_set_cxpu_instance_memory_limit{nullptr, "xpumlDeviceSetCxpuInstanceMemoryLimit"};
  Function<decltype(&::xpumlDeviceDestroyCxpuInstance)> device_destroy_cxpu_instance{
      nullptr, "xpumlDeviceDestroyCxpuInstance"};

  bool has_cxpu_instances() const {
    return device_create_cxpu_instance.available() &&
           device_set_cxpu_instance_memory_limit.available() &&
           device_destroy_cxpu_instance.available();
  }
};

class Library {
 public:
  // Loads the library, resolves its symbols and calls xpumlInit. The error names the file and
  // what is wrong with it: not found, not loadable, too old (missing symbols), init failed.
  // `init_failed` (when given) tells the last apart: the library is fine, the driver may come.
  static xpu::Result<std::unique_ptr<Library>> open(const std::filesystem::path& path,
                                                    bool* init_failed = nullptr);

  // Tries `candidates` in order ([xpuml] library): the first that loads and has the required
  // symbols wins, and is then initialised (an xpumlInit failure is that library's, with
  // `init_failed` set: the driver may come, another copy would not help). When none loads,
  // the error lists every candidate with why it failed. The winner's path() is the file the
  // loader opened, also for a bare name it searched for; the log says which.
  static xpu::Result<std::unique_ptr<Library>> open_first(
      const std::vector<std::filesystem::path>& candidates, bool* init_failed = nullptr);

  // A library whose functions are given rather than loaded: what fuzz/xpuml_results_fuzzer.cpp
  // feeds the backend. No xpumlInit here; xpumlShutdown at destruction as for a loaded one.
  // `name` stands for the file in messages.
  static std::unique_ptr<Library> from_symbols(std::filesystem::path name, const Symbols& symbols);

  // xpumlShutdown, then dlclose. The owner must not destroy the library while a call is running
  // (xpud's sampler holds the backend in every call it has started, even one it gave up on).
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  const Symbols& symbols() const { return symbols_; }
  const std::filesystem::path& path() const { return path_; }

  // Calls one library function (resolved, or checked with available() when optional).
  template <typename Fn, typename... Args>
  auto call(const Function<Fn>& function, Args... args) const {
    return function.fn(args...);
  }

  // "xpumlDeviceGetMemoryInfo(xpu2): XPU_IS_LOST (15): <what it means>", using the library's
  // xpumlErrorString when it has one.
  std::string error_message(std::string_view function, std::string_view subject,
                            xpumlReturn_t code);

 private:
  Library(std::filesystem::path path, DlHandle handle, Symbols symbols);

  // dlopen and symbols, no xpumlInit: what open and open_first share.
  static xpu::Result<std::unique_ptr<Library>> load(const std::filesystem::path& path);
  // xpumlInit on a loaded library.
  static xpu::Result<std::unique_ptr<Library>> initialise(std::unique_ptr<Library> library,
                                                          bool* init_failed);

  std::filesystem::path path_;
  DlHandle handle_;
  Symbols symbols_;
};

// Text the library wrote into a buffer of `capacity` bytes: stops at the first NUL or at the
// end of the buffer (the library may not terminate it), trims surrounding blanks. nullopt when
// empty or when it holds anything but printable ASCII.
std::optional<std::string> text_from_library(const char* buffer, std::size_t capacity);

}  // namespace xpud::xpuml
