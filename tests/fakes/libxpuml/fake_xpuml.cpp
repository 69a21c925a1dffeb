// A stand-in for the vendor's libxpuml.so.1, played from a scenario file (see README.md), so
// that the xpuml backend and the whole daemon can be tested without Kunlunxin hardware.
//
// It behaves as the vendor's header, tools and driver say (docs/hardware.md), not as xpud expects:
// minors in steps of two, a physical id per device (xpumlDeviceGetId), 128-byte process records
// filled only up to the capacity the caller offers, SR-IOV PFs whose VFs are devices of their own,
// model ids by board, and no xpumlDeviceGetUUID (no public header declares it).
//
// Built in variants (see CMakeLists.txt): XPUML_FAKE_OLD leaves out the symbols only newer
// libraries have; XPUML_FAKE_WITHOUT_MEMORY_INFO also leaves out a required one;
// XPUML_FAKE_UUID adds xpumlDeviceGetUUID, for the tests of a library that would export it.

// The C ABI is the only thing this library exports (the rest is built hidden), exactly like the
// vendor's, so a missing symbol here is a missing symbol for dlsym.
#pragma GCC visibility push(default)
#include "xpud/backends/xpuml/xpuml_api.h"
extern "C" unsigned xpumlFakeCallCount(const char* function);
#pragma GCC visibility pop

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/fakes/libxpuml/fake_scenario.h"
#include "xpud/backends/xpuml/xpuml_return_codes.h"

namespace xpuml_fake {
namespace {

constexpr const char* kScriptVariable = "XPUML_FAKE_SCRIPT";

// Identifies one version of the script file: a rewrite changes the mtime, an atomic rename the
// inode, so either makes the fake re-read it.
struct ScriptStamp {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  std::int64_t mtime_sec = 0;
  long mtime_nsec = 0;
  bool operator==(const ScriptStamp&) const = default;
};

class FakeLibrary {
 public:
  // One per process: the vendor library keeps its state globally as well, and callers only
  // reach it through the C functions below. Never destroyed (and the library is linked
  // -z nodelete, so the pointer stays reachable): a call sleeping in an injected delay on a thread
  // its caller gave up on may wake up while the process is exiting, and must not find the state
  // torn down by static destructors.
  static FakeLibrary& instance() {
    static FakeLibrary* library = new FakeLibrary;
    return *library;
  }

  xpumlReturn_t init() {
    auto plan = enter("xpumlInit", nullptr);
    wait(plan);
    if (plan.code != XPUML_SUCCESS) return plan.code;
    std::lock_guard lock(mutex_);
    ++init_count_;
    return XPUML_SUCCESS;
  }

  xpumlReturn_t shutdown() {
    auto plan = enter("xpumlShutdown", nullptr);
    wait(plan);
    if (plan.code != XPUML_SUCCESS) return plan.code;
    std::lock_guard lock(mutex_);
    if (init_count_ == 0) return XPUML_ERROR_UNINITIALIZED;
    --init_count_;
    return XPUML_SUCCESS;
  }

  // A call that concerns no device. body(const Scenario&) runs under the lock.
  template <typename Body>
  xpumlReturn_t system_call(const char* function, Body body) {
    auto plan = enter(function, nullptr);
    wait(plan);
    if (plan.code != XPUML_SUCCESS) return plan.code;
    std::lock_guard lock(mutex_);
    return body(scenario_);
  }

  // A call on one device handle. body(const FakeDevice&) runs under the lock.
  template <typename Body>
  xpumlReturn_t device_call(const char* function, xpumlDevice_t device, Body body) {
    auto plan = enter(function, &device);
    wait(plan);
    if (plan.code != XPUML_SUCCESS) return plan.code;
    std::lock_guard lock(mutex_);
    // The scenario may have been replaced while we slept: look the device up again.
    if (plan.index >= scenario_.devices.size()) return XPUML_ERROR_XPU_IS_LOST;
    return body(scenario_.devices[plan.index]);
  }

  // xpumlDeviceSetSriovVfNum: like the driver, the virtual functions exist as soon as the call
  // returns, as further devices (after the scenario's own), and stay when the scenario file is
  // re-read.
  xpumlReturn_t set_vf_count(const char* function, xpumlDevice_t device, int vf_num) {
    auto plan = enter(function, &device);
    wait(plan);
    if (plan.code != XPUML_SUCCESS) return plan.code;
    std::lock_guard lock(mutex_);
    if (plan.index >= scenario_.devices.size()) return XPUML_ERROR_XPU_IS_LOST;
    const FakeDevice& pf = scenario_.devices[plan.index];
    if (!has_sriov(pf) || plan.index >= base_devices_.size()) return XPUML_ERROR_NOT_SUPPORTED;
    if (vf_num < 0 || static_cast<unsigned>(vf_num) > pf.max_vfs)
      return XPUML_ERROR_INVALID_ARGUMENT;
    vf_counts_[pf.bus_id] = static_cast<unsigned>(vf_num);
    add_virtual_functions();
    return XPUML_SUCCESS;
  }

  // The three cXPU instance calls. The header fixes the id's length (XPUML_CXPU_INST_ID_LEN),
  // the memory types (xpumlMemoryLocation_t) and "no limit" (XPUML_CXPU_MEM_UNLIMIT), and says
  // nothing of the codes for an id that exists already or not at all: the fake answers IN_USE
  // and NOT_FOUND. Instances are kept by the card's bus id, so they survive a re-read of the
  // scenario, and are written to $XPUML_FAKE_CXPU_STATE (when set) after every change.
  enum class CxpuCall { Create, SetLimit, Destroy };
  xpumlReturn_t cxpu_call(const char* function, xpumlDevice_t device, const char* id, CxpuCall call,
                          unsigned memory_type = 0,
                          unsigned long long limit = XPUML_CXPU_MEM_UNLIMIT) {
    auto plan = enter(function, &device);
    wait(plan);
    if (plan.code != XPUML_SUCCESS) return plan.code;
    std::lock_guard lock(mutex_);
    if (plan.index >= scenario_.devices.size()) return XPUML_ERROR_XPU_IS_LOST;
    if (id == nullptr) return XPUML_ERROR_INVALID_ARGUMENT;
    const std::size_t length = ::strnlen(id, XPUML_CXPU_INST_ID_LEN + 1);
    if (length == 0 || length > XPUML_CXPU_INST_ID_LEN) return XPUML_ERROR_INVALID_ARGUMENT;
    const CxpuKey key{scenario_.devices[plan.index].bus_id, std::string(id, length)};
    auto instance = cxpu_instances_.find(key);
    switch (call) {
      case CxpuCall::Create:
        if (instance != cxpu_instances_.end()) return XPUML_ERROR_IN_USE;
        cxpu_instances_[key] = CxpuLimits{};
        break;
      case CxpuCall::SetLimit:
        if (memory_type >= XPUML_MEMORY_LOCATION_COUNT) return XPUML_ERROR_INVALID_ARGUMENT;
        if (instance == cxpu_instances_.end()) return XPUML_ERROR_NOT_FOUND;
        instance->second.bytes[memory_type] = limit;
        break;
      case CxpuCall::Destroy:
        if (instance == cxpu_instances_.end()) return XPUML_ERROR_NOT_FOUND;
        cxpu_instances_.erase(instance);
        break;
    }
    write_cxpu_state();
    return XPUML_SUCCESS;
  }

  xpumlReturn_t handle_by_index(unsigned index, xpumlDevice_t* device) {
    auto plan = enter("xpumlDeviceGetHandleByIndex", nullptr, index);
    wait(plan);
    if (plan.code != XPUML_SUCCESS) return plan.code;
    if (device == nullptr) return XPUML_ERROR_INVALID_ARGUMENT;
    device->opaque = &handle_slots_[index];
    return XPUML_SUCCESS;
  }

  unsigned call_count(const char* function) {
    std::lock_guard lock(mutex_);
    if (function == nullptr) {
      unsigned total = 0;
      for (const auto& [name, count] : calls_) total += count;
      return total;
    }
    auto it = calls_.find(std::string_view(function));
    return it == calls_.end() ? 0 : it->second;
  }

  void count_call(const char* function) {
    std::lock_guard lock(mutex_);
    ++calls_[function];
  }

 private:
  // What a call will do, decided under the lock before any delay is served.
  struct Plan {
    xpumlReturn_t code = XPUML_SUCCESS;
    unsigned delay_ms = 0;
    std::size_t index = 0;  // the device, for device calls
  };

  static void wait(const Plan& plan) {
    if (plan.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(plan.delay_ms));
  }

  // Counts the call, refreshes the scenario and decides the outcome: load errors, missing init,
  // bad handles, lost devices and injected failures, in that order. `by_index` is set for
  // xpumlDeviceGetHandleByIndex, which names its device by index rather than handle.
  Plan enter(const char* function, const xpumlDevice_t* device,
             std::optional<unsigned> by_index = std::nullopt) {
    std::lock_guard lock(mutex_);
    ++calls_[function];
    refresh();
    Plan plan;
    if (load_error_) {
      plan.code = load_error_code_;
      return plan;
    }
    const bool is_init = std::strcmp(function, "xpumlInit") == 0;
    if (!is_init && init_count_ == 0) {
      plan.code = XPUML_ERROR_UNINITIALIZED;
      return plan;
    }
    FakeDevice* target = nullptr;
    if (device != nullptr || by_index) {
      std::optional<std::size_t> index = by_index;
      if (device != nullptr) index = slot_of(*device);
      if (!index) {
        plan.code = XPUML_ERROR_INVALID_ARGUMENT;
        return plan;
      }
      if (*index >= scenario_.devices.size()) {
        // A handle from before the scenario shrank behaves like a card that fell off the bus.
        plan.code = device != nullptr ? XPUML_ERROR_XPU_IS_LOST : XPUML_ERROR_INVALID_ARGUMENT;
        return plan;
      }
      plan.index = *index;
      target = &scenario_.devices[*index];
    }
    Injections* local = target != nullptr ? &target->injections : nullptr;
    if (local != nullptr && local->delays_ms.contains(function))
      plan.delay_ms = local->delays_ms.find(std::string_view(function))->second;
    else if (auto it = scenario_.injections.delays_ms.find(std::string_view(function));
             it != scenario_.injections.delays_ms.end())
      plan.delay_ms = it->second;
    if (target != nullptr && target->lost) {
      plan.code = XPUML_ERROR_XPU_IS_LOST;
      return plan;
    }
    Failure* failure = nullptr;
    if (local != nullptr) {
      if (auto it = local->failures.find(std::string_view(function)); it != local->failures.end())
        failure = &it->second;
    }
    if (failure == nullptr) {
      if (auto it = scenario_.injections.failures.find(std::string_view(function));
          it != scenario_.injections.failures.end())
        failure = &it->second;
    }
    if (failure != nullptr && failure->calls++ >= failure->after) plan.code = failure->code;
    return plan;
  }

  std::optional<std::size_t> slot_of(xpumlDevice_t device) const {
    auto address = reinterpret_cast<std::uintptr_t>(device.opaque);
    auto first = reinterpret_cast<std::uintptr_t>(handle_slots_.data());
    if (address < first || address >= first + handle_slots_.size()) return std::nullopt;
    return address - first;
  }

  // Re-reads the script when the variable or the file changed. Called with the lock held.
  void refresh() {
    const char* path = std::getenv(kScriptVariable);
    if (path == nullptr || *path == '\0') {
      fail_load(XPUML_ERROR_DRIVER_NOT_LOADED,
                std::string(kScriptVariable) + " is not set; behaving like a host without driver");
      path_.clear();
      stamp_.reset();
      return;
    }
    struct stat st {};
    if (::stat(path, &st) != 0) {
      fail_load(XPUML_ERROR_UNKNOWN, std::string("cannot stat ") + kScriptVariable + "=" + path +
                                         ": " + std::strerror(errno));
      stamp_.reset();
      return;
    }
    ScriptStamp stamp{st.st_dev, st.st_ino, st.st_size,
                      static_cast<std::int64_t>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec};
    if (path_ == path && stamp_ == stamp) return;
    path_ = path;
    stamp_ = stamp;
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    if (!file) {
      fail_load(XPUML_ERROR_UNKNOWN, std::string("cannot read ") + path);
      return;
    }
    auto parsed = parse_scenario(text.str());
    if (!parsed) {
      fail_load(XPUML_ERROR_UNKNOWN, std::string(path) + ": " + parsed.error());
      return;
    }
    scenario_ = std::move(*parsed);
    base_devices_ = scenario_.devices;
    add_virtual_functions();
    load_error_.reset();
  }

  // The scenario's devices, then the virtual functions of each PF in vf_counts_: bus ids
  // <pf bus>:<dd>.<f> counting up from the PF's function, KL2 VF PCI ids, the next free physical
  // ids and minors (in steps of two, as the driver hands them out). A PF with VFs on reports
  // SRIOV_ON and model id 200 (R200-PF); its VFs model id 201, 202 or 203 when it has one, two or
  // three of them (the header's VF_ONE_OF_ONE/TWO/THREE: R200-VF-16G/-8G/-5G), unknown beyond,
  // and each its share of the PF's memory. A VF reports NON_SRIOV: the vendor's device plugin
  // skips every device in SRIOV_ON mode as a PF and offers the others, so its VFs cannot be in
  // that mode. Called with the lock held.
  void add_virtual_functions() {
    scenario_.devices = base_devices_;
    unsigned next_minor = 0;
    int next_id = 0;
    for (const auto& d : base_devices_) {
      next_minor = std::max(next_minor, d.minor + 2);
      next_id = std::max(next_id, d.physical_id + 1);
    }
    // Every VF pushed below may move the devices: room for all of them first, so `pf` stays valid.
    scenario_.devices.reserve(kMaxDevices);
    for (std::size_t i = 0; i < base_devices_.size(); ++i) {
      FakeDevice& pf = scenario_.devices[i];
      if (!has_sriov(pf)) continue;
      auto wanted = vf_counts_.find(pf.bus_id);
      const unsigned count = wanted == vf_counts_.end() ? 0 : std::min(wanted->second, pf.max_vfs);
      pf.vxpu_mode = count > 0 ? XPUML_HOST_VXPU_SRIOV_ON : XPUML_HOST_VXPU_SRIOV_OFF;
      if (count > 0) pf.model_id = XPUML_DEVICE_MODEL_KL2_R200_SRIOV_PF;
      unsigned domain = 0, bus = 0, dev = 0, fn = 0;
      if (std::sscanf(pf.bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) continue;
      for (unsigned k = 1; k <= count && scenario_.devices.size() < kMaxDevices; ++k) {
        const auto index = static_cast<unsigned>(scenario_.devices.size());
        FakeDevice vf = default_device(index);
        const unsigned slot = dev * 8 + fn + k;
        char bus_id[32];
        std::snprintf(bus_id, sizeof bus_id, "%08X:%02X:%02X.%01X", domain, bus, (slot / 8) & 0x1f,
                      slot % 8);
        vf.bus_id = bus_id;
        vf.pci_device_id = 0x36851d22;
        vf.pci_subsystem_id = pf.pci_subsystem_id;
        vf.board = pf.board;
        vf.model_id = count <= 3 ? XPUML_DEVICE_MODEL_KL2_R200_SRIOV_PF + static_cast<int>(count)
                                 : XPUML_DEVICE_MODEL_UNKNOWN;
        vf.name = "KL2-VF";
        vf.minor = next_minor;
        next_minor += 2;
        vf.physical_id = next_id++;
        vf.vxpu_mode = XPUML_HOST_VXPU_NON_SRIOV;
        vf.max_vfs = XPUML_VALUE_NOT_AVAILABLE_UNSIGNED;
        vf.memory_total = pf.memory_total / count;
        scenario_.devices.push_back(std::move(vf));
      }
    }
  }

  // One line per instance, "<bus id> <instance id> <global limit> <L3 limit>" (limits in bytes,
  // 18446744073709551615 for none), replaced atomically. Called with the lock held.
  void write_cxpu_state() const {
    const char* path = std::getenv("XPUML_FAKE_CXPU_STATE");
    if (path == nullptr || *path == '\0') return;
    const std::string temporary = std::string(path) + ".tmp";
    {
      std::ofstream out(temporary, std::ios::trunc);
      for (const auto& [key, limits] : cxpu_instances_)
        out << key.first << ' ' << key.second << ' ' << limits.bytes[0] << ' ' << limits.bytes[1]
            << '\n';
      if (!out) {
        std::fprintf(stderr, "fake libxpuml: cannot write %s\n", temporary.c_str());
        return;
      }
    }
    if (std::rename(temporary.c_str(), path) != 0)
      std::fprintf(stderr, "fake libxpuml: cannot rename %s: %s\n", temporary.c_str(),
                   std::strerror(errno));
  }

  void fail_load(xpumlReturn_t code, std::string message) {
    if (load_error_ != message) std::fprintf(stderr, "fake libxpuml: %s\n", message.c_str());
    load_error_ = std::move(message);
    load_error_code_ = code;
  }

  std::mutex mutex_;
  Scenario scenario_;                          // what the calls see: base_devices_ plus VFs
  std::vector<FakeDevice> base_devices_;       // the scenario file's own devices
  std::map<std::string, unsigned> vf_counts_;  // PF bus id -> VFs set by xpumlDeviceSetSriovVfNum
  std::optional<std::string> load_error_;
  xpumlReturn_t load_error_code_ = XPUML_SUCCESS;
  std::string path_;
  std::optional<ScriptStamp> stamp_;
  int init_count_ = 0;
  std::map<std::string, unsigned, std::less<>> calls_;
  using CxpuKey = std::pair<std::string, std::string>;  // card bus id, instance id
  struct CxpuLimits {
    unsigned long long bytes[XPUML_MEMORY_LOCATION_COUNT] = {XPUML_CXPU_MEM_UNLIMIT,
                                                             XPUML_CXPU_MEM_UNLIMIT};
  };
  std::map<CxpuKey, CxpuLimits> cxpu_instances_;
  // Handles point into this array: the offset is the device index.
  std::array<char, kMaxDevices> handle_slots_{};
};

FakeLibrary& fake() {
  return FakeLibrary::instance();
}

xpumlReturn_t copy_text(const std::string& text, char* buffer, unsigned length) {
  if (buffer == nullptr) return XPUML_ERROR_INVALID_ARGUMENT;
  if (text.size() + 1 > length) return XPUML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buffer, text.c_str(), text.size() + 1);
  return XPUML_SUCCESS;
}

template <typename T>
xpumlReturn_t store(T* out, T value) {
  if (out == nullptr) return XPUML_ERROR_INVALID_ARGUMENT;
  *out = value;
  return XPUML_SUCCESS;
}

}  // namespace
}  // namespace xpuml_fake

using xpuml_fake::fake;
using xpuml_fake::FakeDevice;
using xpuml_fake::FakeLibrary;
using xpuml_fake::Scenario;

#pragma GCC visibility push(default)
extern "C" {

xpumlReturn_t xpumlInit(void) {
  return fake().init();
}

xpumlReturn_t xpumlShutdown(void) {
  return fake().shutdown();
}

xpumlReturn_t xpumlSystemGetDriverVersion(char* version, unsigned length) {
  return fake().system_call(__func__, [&](const Scenario& s) -> xpumlReturn_t {
    return xpuml_fake::copy_text(s.driver_version, version, length);
  });
}

xpumlReturn_t xpumlSystemGetXPUMLVersion(char* version, unsigned length) {
  return fake().system_call(__func__, [&](const Scenario& s) -> xpumlReturn_t {
    return xpuml_fake::copy_text(s.xpuml_version, version, length);
  });
}

xpumlReturn_t xpumlDeviceGetCount(unsigned* count) {
  return fake().system_call(__func__, [&](const Scenario& s) -> xpumlReturn_t {
    return xpuml_fake::store(count, static_cast<unsigned>(s.devices.size()));
  });
}

xpumlReturn_t xpumlDeviceGetHandleByIndex(unsigned index, xpumlDevice_t* device) {
  return fake().handle_by_index(index, device);
}

xpumlReturn_t xpumlDeviceGetSerial(xpumlDevice_t device, char* serial, unsigned length) {
  return fake().device_call(__func__, device, [&](const FakeDevice& d) -> xpumlReturn_t {
    return xpuml_fake::copy_text(d.serial, serial, length);
  });
}

xpumlReturn_t xpumlDeviceGetPciInfo(xpumlDevice_t device, xpumlPciInfo_t* pci) {
  return fake().device_call(__func__, device, [&](const FakeDevice& d) -> xpumlReturn_t {
    if (pci == nullptr) return XPUML_ERROR_INVALID_ARGUMENT;
    *pci = xpumlPciInfo_t{};
    // Fields follow the string when it parses; a deliberately malformed bus_id leaves them 0.
    unsigned domain = 0, bus = 0, dev = 0, fn = 0;
    if (std::sscanf(d.bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &fn) == 4) {
      pci->domain = domain;
      pci->bus = bus;
      pci->device = dev;
      pci->function = fn;
    }
    pci->pciDeviceId = d.pci_device_id;
    pci->pciSubSystemId = d.pci_subsystem_id;
    // Like a C library writing a fixed-size field: truncated, NUL-terminated when it fits.
    // (strncpy's semantics, spelled out: a 32-character id fills the field with no terminator.)
    std::memset(pci->busId, 0, sizeof pci->busId);
    std::memcpy(pci->busId, d.bus_id.data(), std::min(d.bus_id.size(), sizeof pci->busId));
    return XPUML_SUCCESS;
  });
}

xpumlReturn_t xpumlDeviceGetAttributes(xpumlDevice_t device, xpumlDeviceAttributes_t* attributes) {
  return fake().device_call(__func__, device, [&](const FakeDevice& d) -> xpumlReturn_t {
    if (attributes == nullptr) return XPUML_ERROR_INVALID_ARGUMENT;
    *attributes = xpumlDeviceAttributes_t{};
    attributes->archId = d.arch;
    attributes->boardId = d.board;
    attributes->modelId = d.model_id.value_or(xpuml_fake::model_id_for_board(d.board));
    attributes->clusterCount = 8;
    attributes->sdnnCount = 8;
    attributes->maxVFCount = d.max_vfs;
    attributes->globalMemorySizeMB = d.memory_total >> 20;
    attributes->l3MemorySizeMB = d.l3_total >> 20;
    attributes->sn[0] = d.sn[0];
    attributes->sn[1] = d.sn[1];
    return XPUML_SUCCESS;
  });
}

#ifndef XPUML_FAKE_WITHOUT_MEMORY_INFO
xpumlReturn_t xpumlDeviceGetMemoryInfo(xpumlDevice_t device, xpumlMemory_t* memory) {
  return fake().device_call(__func__, device, [&](const FakeDevice& d) -> xpumlReturn_t {
    if (memory == nullptr) return XPUML_ERROR_INVALID_ARGUMENT;
    *memory = xpumlMemory_t{};
    memory->pageSizeGlobalMemory = 4096;
    memory->totalGlobalMemory = d.memory_total;
    memory->usedGlobalMemory = d.memory_used;
    memory->freeGlobalMemory = d.memory_total > d.memory_used ? d.memory_total - d.memory_used : 0;
    memory->pageSizeL3Memory = 4096;
    memory->totalL3Memory = d.l3_total;
    memory->usedL3Memory = d.l3_used;
    memory->freeL3Memory = d.l3_total > d.l3_used ? d.l3_total - d.l3_used : 0;
    return XPUML_SUCCESS;
  });
}
#endif

xpumlReturn_t xpumlDeviceGetUtilizationRates(xpumlDevice_t device,
                                             xpumlUtilization_t* utilization) {
  return fake().device_call(__func__, device, [&](const FakeDevice& d) -> xpumlReturn_t {
    if (utilization == nullptr) return XPUML_ERROR_INVALID_ARGUMENT;
    *utilization = xpumlUtilization_t{};
    utilization->xpu = d.utilization;
    utilization->memory = d.memory_utilization;
    return XPUML_SUCCESS;
  });
}

xpumlReturn_t xpumlDeviceGetTemperature(xpumlDevice_t device, int sensor, unsigned* celsius) {
  return fake().device_call(__func__, device, [&](const FakeDevice& d) -> xpumlReturn_t {
    if (sensor != XPUML_TEMPERATURE_SENSOR_DIE) return XPUML_ERROR_NOT_SUPPORTED;
    return xpuml_fake::store(celsius, d.temperature);
  });
}

xpumlReturn_t xpumlDeviceGetPowerUsage(xpumlDevice_t device, unsigned* milliwatts) {
  return fake().device_call(__func__, device, [&](const FakeDevice& d) -> xpumlReturn_t {
    return xpuml_fake::store(milliwatts, d.power_mw);
  });
}

xpumlReturn_t xpumlDeviceGetClockInfo(xpumlDevice_t device, int type, unsigned* mhz) {
  return fake().device_call(__func__, device, [&](const FakeDevice& d) -> xpumlReturn_t {
    if (type != XPUML_CLOCK_XPU) return XPUML_ERROR_NOT_SUPPORTED;
    return xpuml_fake::store(mhz, d.clock_mhz);
  });
}

xpumlReturn_t xpumlDeviceGetState(xpumlDevice_t device, int* state) {
  return fake().device_call(__func__, device, [&](const FakeDevice& d) -> xpumlReturn_t {
    return xpuml_fake::store(state, d.state);
  });
}

// NVML's sizing protocol, as the header documents it: *count is the room the caller offers.
// With more processes than that, nothing is written, *count becomes the number needed and the
// call returns INSUFFICIENT_SIZE; otherwise exactly *count (now the number of processes) 128-byte
// records are written. Never a record beyond the room offered (fake_xpuml_processes_test checks
// with a canary).
xpumlReturn_t xpumlDeviceGetComputeRunningProcesses(xpumlDevice_t device, unsigned* count,
                                                    xpumlProcessInfo_t* infos) {
  return fake().device_call(__func__, device, [&](const FakeDevice& d) -> xpumlReturn_t {
    if (count == nullptr) return XPUML_ERROR_INVALID_ARGUMENT;
    const unsigned room = *count;
    if (room < d.processes) {
      *count = d.processes;
      return XPUML_ERROR_INSUFFICIENT_SIZE;
    }
    if (infos == nullptr && d.processes > 0) return XPUML_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; i < d.processes && i < room; ++i)
      infos[i] = i < d.process_list.size()
                     ? d.process_list[i]
                     : xpuml_fake::process_record(1000 + i, std::uint64_t{1} << 30, 1000 + i);
    *count = d.processes;
    return XPUML_SUCCESS;
  });
}

xpumlReturn_t xpumlDeviceGetBoardId(xpumlDevice_t device, unsigned* board_id) {
  return fake().device_call(__func__, device, [&](const FakeDevice& d) -> xpumlReturn_t {
    return xpuml_fake::store(board_id, static_cast<unsigned>(d.board));
  });
}

xpumlReturn_t xpumlDeviceGetArchitecture(xpumlDevice_t device, unsigned* arch) {
  return fake().device_call(__func__, device, [&](const FakeDevice& d) -> xpumlReturn_t {
    return xpuml_fake::store(arch, static_cast<unsigned>(d.arch));
  });
}

xpumlReturn_t xpumlDeviceGetHostVxpuMode(xpumlDevice_t device, int* mode) {
  return fake().device_call(__func__, device, [&](const FakeDevice& d) -> xpumlReturn_t {
    return xpuml_fake::store(mode, d.vxpu_mode);
  });
}

#ifndef XPUML_FAKE_OLD
xpumlReturn_t xpumlDeviceSetSriovVfNum(xpumlDevice_t device, int vf_num) {
  return fake().set_vf_count(__func__, device, vf_num);
}

xpumlReturn_t xpumlDeviceGetName(xpumlDevice_t device, char* name, unsigned length) {
  return fake().device_call(__func__, device, [&](const FakeDevice& d) -> xpumlReturn_t {
    return xpuml_fake::copy_text(d.name, name, length);
  });
}

xpumlReturn_t xpumlDeviceGetMinorNumber(xpumlDevice_t device, unsigned* minor) {
  return fake().device_call(__func__, device, [&](const FakeDevice& d) -> xpumlReturn_t {
    return xpuml_fake::store(minor, d.minor);
  });
}

xpumlReturn_t xpumlDeviceGetId(xpumlDevice_t device, int* id) {
  return fake().device_call(__func__, device, [&](const FakeDevice& d) -> xpumlReturn_t {
    return xpuml_fake::store(id, d.physical_id);
  });
}

#ifdef XPUML_FAKE_UUID
// Not in any public header: only the fake-xpuml-uuid variant has it.
xpumlReturn_t xpumlDeviceGetUUID(xpumlDevice_t device, char* uuid, unsigned length) {
  return fake().device_call(__func__, device, [&](const FakeDevice& d) -> xpumlReturn_t {
    return xpuml_fake::copy_text(d.uuid, uuid, length);
  });
}
#endif

xpumlReturn_t xpumlDeviceCreateCxpuInstance(xpumlDevice_t device, char* instance_id) {
  return fake().cxpu_call(__func__, device, instance_id, FakeLibrary::CxpuCall::Create);
}

xpumlReturn_t xpumlDeviceSetCxpuInstanceMemoryLimit(xpumlDevice_t device, char* instance_id,
                                                    unsigned memory_type,
                                                    unsigned long long limit_bytes) {
  return fake().cxpu_call(__func__, device, instance_id, FakeLibrary::CxpuCall::SetLimit,
                          memory_type, limit_bytes);
}

xpumlReturn_t xpumlDeviceDestroyCxpuInstance(xpumlDevice_t device, char* instance_id) {
  return fake().cxpu_call(__func__, device, instance_id, FakeLibrary::CxpuCall::Destroy);
}

// Worded differently from xpud's own descriptions, so tests can tell which one they got.
const char* xpumlErrorString(xpumlReturn_t result) {
  fake().count_call(__func__);
  switch (result) {
    case XPUML_SUCCESS:
      return "fake libxpuml: success";
    case XPUML_ERROR_XPU_IS_LOST:
      return "fake libxpuml: the XPU is lost";
    case XPUML_ERROR_DRIVER_NOT_LOADED:
      return "fake libxpuml: driver not loaded";
    case XPUML_ERROR_NOT_SUPPORTED:
      return "fake libxpuml: not supported";
    default:
      return "fake libxpuml: error";
  }
}
#endif

// Test hook, not part of the vendor ABI: how often `function` was called since the library was
// loaded (every call counts, whatever its outcome); nullptr: all functions together.
unsigned xpumlFakeCallCount(const char* function) {
  return fake().call_count(function);
}

}  // extern "C"
#pragma GCC visibility pop
