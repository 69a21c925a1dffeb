// The C ABI of the vendor management library libxpuml.so.1, written from the facts in
// xpu-facts.md (no vendor header is used).
//
// xpud never links against these functions: it resolves them with dlsym and uses decltype of the
// declarations below as the pointer types. The fake library (tests/fakes/libxpuml) defines them,
// so the compiler checks that the fake and the backend agree on every signature.
#pragma once

#include <cstdint>

extern "C" {

using xpumlReturn_t = int;

enum xpumlReturnCode : int {
  XPUML_SUCCESS = 0,
  XPUML_ERROR_UNINITIALIZED = 1,
  XPUML_ERROR_INVALID_ARGUMENT = 2,
  XPUML_ERROR_NOT_SUPPORTED = 3,
  XPUML_ERROR_NO_PERMISSION = 4,
  XPUML_ERROR_ALREADY_INITIALIZED = 5,
  XPUML_ERROR_NOT_FOUND = 6,
  XPUML_ERROR_INSUFFICIENT_SIZE = 7,
  XPUML_ERROR_INSUFFICIENT_POWER = 8,
  XPUML_ERROR_DRIVER_NOT_LOADED = 9,
  XPUML_ERROR_TIMEOUT = 10,
  XPUML_ERROR_IRQ_ISSUE = 11,
  XPUML_ERROR_LIBRARY_NOT_FOUND = 12,
  XPUML_ERROR_FUNCTION_NOT_FOUND = 13,
  XPUML_ERROR_CORRUPTED_INFOROM = 14,
  XPUML_ERROR_XPU_IS_LOST = 15,
  XPUML_ERROR_RESET_REQUIRED = 16,
  XPUML_ERROR_OPERATING_SYSTEM = 17,
  XPUML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  XPUML_ERROR_IN_USE = 19,
  XPUML_ERROR_MEMORY = 20,
  XPUML_ERROR_NO_DATA = 21,
  XPUML_ERROR_VXPU_ECC_NOT_SUPPORTED = 22,
  XPUML_ERROR_INSUFFICIENT_RESOURCES = 23,
  XPUML_ERROR_FREQ_NOT_SUPPORTED = 24,
  XPUML_ERROR_UNKNOWN = 999,
};

// Values of xpumlDeviceGetState.
enum xpumlDeviceState : int {
  XPUML_DEVICE_STATE_UNUSED = 0,
  XPUML_DEVICE_STATE_RUNNING = 201,
  XPUML_DEVICE_STATE_IN_RESET = 205,
  XPUML_DEVICE_STATE_ERROR = 207,
  XPUML_DEVICE_STATE_IN_EXCEPTION = 208,
};

// Values of xpumlDeviceGetHostVxpuMode.
enum xpumlHostVxpuMode : int {
  XPUML_HOST_VXPU_NON_SRIOV = 0,
  XPUML_HOST_VXPU_SRIOV_OFF = 1,
  XPUML_HOST_VXPU_SRIOV_ON = 2,
};

inline constexpr int XPUML_TEMPERATURE_SENSOR_DIE = 0;
inline constexpr int XPUML_CLOCK_XPU = 0;

// A device handle: a struct holding one opaque pointer, passed by value.
struct xpumlDevice_t {
  void* opaque;
};

inline constexpr unsigned XPUML_PCI_BUS_ID_SIZE = 32;

struct xpumlPciInfo_t {
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned function;
  unsigned pciDeviceId;               // device id << 16 | vendor id
  unsigned pciSubSystemId;            // subsystem device id << 16 | subsystem vendor id
  char busId[XPUML_PCI_BUS_ID_SIZE];  // "%08X:%02X:%02X.%01X"
  std::uint64_t reserved[9];
};

struct xpumlDeviceAttributes_t {
  int archId;
  int boardId;
  int modelId;
  unsigned clusterCount;
  unsigned sdnnCount;
  unsigned dmaEngineCount;
  unsigned decoderCount;
  unsigned encoderCount;
  unsigned imgProcCount;
  unsigned maxVFCount;
  std::uint64_t globalMemorySizeMB;
  std::uint64_t l3MemorySizeMB;
  std::uint64_t sn[2];
  std::uint64_t reserved[7];
};

struct xpumlMemory_t {  // bytes
  std::uint64_t pageSizeGlobal;
  std::uint64_t totalGlobal;
  std::uint64_t freeGlobal;
  std::uint64_t usedGlobal;
  std::uint64_t pageSizeL3;
  std::uint64_t totalL3;
  std::uint64_t freeL3;
  std::uint64_t usedL3;
  std::uint64_t reserved[8];
};

struct xpumlUtilization_t {  // percent
  unsigned xpu;
  unsigned memory;
  std::uint64_t reserved[15];
};

struct xpumlProcessInfo_t {
  unsigned pid;
  std::uint64_t usedGlobal;
  std::uint64_t usedL3;
  unsigned root_ns_pid;
};

// Every fixed-size structure of the library is 128 bytes; a layout slip here would make the
// library write past our buffers.
static_assert(sizeof(xpumlPciInfo_t) == 128);
static_assert(sizeof(xpumlDeviceAttributes_t) == 128);
static_assert(sizeof(xpumlMemory_t) == 128);
static_assert(sizeof(xpumlUtilization_t) == 128);
static_assert(sizeof(xpumlDevice_t) == sizeof(void*));
// Natural alignment of the fields above; the facts give the fields, not the size.
static_assert(sizeof(xpumlProcessInfo_t) == 32);

xpumlReturn_t xpumlInit(void);
xpumlReturn_t xpumlShutdown(void);
xpumlReturn_t xpumlSystemGetDriverVersion(char* version, unsigned length);
xpumlReturn_t xpumlSystemGetXPUMLVersion(char* version, unsigned length);
xpumlReturn_t xpumlDeviceGetCount(unsigned* count);
xpumlReturn_t xpumlDeviceGetHandleByIndex(unsigned index, xpumlDevice_t* device);
xpumlReturn_t xpumlDeviceGetSerial(xpumlDevice_t device, char* serial, unsigned length);
xpumlReturn_t xpumlDeviceGetPciInfo(xpumlDevice_t device, xpumlPciInfo_t* pci);
xpumlReturn_t xpumlDeviceGetAttributes(xpumlDevice_t device, xpumlDeviceAttributes_t* attributes);
xpumlReturn_t xpumlDeviceGetMemoryInfo(xpumlDevice_t device, xpumlMemory_t* memory);
xpumlReturn_t xpumlDeviceGetUtilizationRates(xpumlDevice_t device, xpumlUtilization_t* utilization);
xpumlReturn_t xpumlDeviceGetTemperature(xpumlDevice_t device, int sensor, unsigned* celsius);
xpumlReturn_t xpumlDeviceGetPowerUsage(xpumlDevice_t device, unsigned* milliwatts);
xpumlReturn_t xpumlDeviceGetClockInfo(xpumlDevice_t device, int type, unsigned* mhz);
xpumlReturn_t xpumlDeviceGetState(xpumlDevice_t device, int* state);
xpumlReturn_t xpumlDeviceGetComputeRunningProcesses(xpumlDevice_t device, unsigned* count,
                                                    xpumlProcessInfo_t* infos);
xpumlReturn_t xpumlDeviceGetBoardId(xpumlDevice_t device, unsigned* board_id);
xpumlReturn_t xpumlDeviceGetArchitecture(xpumlDevice_t device, int* arch);
xpumlReturn_t xpumlDeviceGetHostVxpuMode(xpumlDevice_t device, int* mode);
xpumlReturn_t xpumlDeviceSetSriovVfNum(xpumlDevice_t device, int vf_num);

// Only in newer libraries.
xpumlReturn_t xpumlDeviceGetName(xpumlDevice_t device, char* name, unsigned length);
xpumlReturn_t xpumlDeviceGetMinorNumber(xpumlDevice_t device, unsigned* minor);
xpumlReturn_t xpumlDeviceGetUUID(xpumlDevice_t device, char* uuid, unsigned length);
const char* xpumlErrorString(xpumlReturn_t result);

}  // extern "C"
