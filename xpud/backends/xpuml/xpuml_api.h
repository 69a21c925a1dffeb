// The C ABI of the vendor management library libxpuml.so.1, declared from the layouts, values and
// signatures of the vendor's public header (src/xpuml.h of zxw3221/libxpu-container, the same
// layouts as pkg/xpuml/xpuml.h of kunlunxin/go-xpuml; docs/hardware.md lists each fact and its
// source). No vendor header is used or copied.
//
// xpud never links against these functions: it resolves them with dlsym and uses decltype of the
// declarations below as the pointer types. The fake library (tests/fakes/libxpuml) defines them,
// so the compiler checks that the fake and the backend agree on every signature. Every struct
// the library fills is declared with all of the header's fields, reserved ones included, and its
// size and field offsets are asserted below: a slip here lets the library write past our buffers.
#pragma once

#include <cstddef>
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

// The header's XPUML_VALUE_NOT_AVAILABLE is (-1); in an unsigned field such as maxVFCount it
// reads 4294967295 (a K200 in go-xpuml's README sample), which means "not available", never a
// limit.
inline constexpr int XPUML_VALUE_NOT_AVAILABLE = -1;
inline constexpr unsigned XPUML_VALUE_NOT_AVAILABLE_UNSIGNED =
    static_cast<unsigned>(XPUML_VALUE_NOT_AVAILABLE);

// Values of attributes.archId and xpumlDeviceGetArchitecture.
enum xpumlDeviceArch : int {
  XPUML_DEVICE_ARCH_UNKNOWN = 0,
  XPUML_DEVICE_ARCH_KL1 = 1,
  XPUML_DEVICE_ARCH_KL2 = 2,
  XPUML_DEVICE_ARCH_KL3 = 3,
};

// Values of attributes.boardId and xpumlDeviceGetBoardId (the header's enum; pci_ids.cpp knows
// a few more boards from the driver's PCI table).
enum xpumlDeviceBoard : int {
  XPUML_DEVICE_BOARD_UNKNOWN = 0,
  XPUML_DEVICE_BOARD_KL1_K100 = 1,
  XPUML_DEVICE_BOARD_KL1_K200 = 2,
  XPUML_DEVICE_BOARD_KL2_R200 = 100,
  XPUML_DEVICE_BOARD_KL2_R300 = 101,
  XPUML_DEVICE_BOARD_KL2_R200_8F = 102,
};

// Values of attributes.modelId. 0 is a K200, not "unset".
enum xpumlDeviceModel : int {
  XPUML_DEVICE_MODEL_KL1_K200 = 0,
  XPUML_DEVICE_MODEL_KL1_K100 = 1,
  XPUML_DEVICE_MODEL_KL2_R200 = 2,
  XPUML_DEVICE_MODEL_KL2_R300 = 3,
  XPUML_DEVICE_MODEL_KL2_R200_8F = 4,
  XPUML_DEVICE_MODEL_KL2_R200_SRIOV_PF = 200,               // R200-PF: its VFs are on
  XPUML_DEVICE_MODEL_KL2_R200_SRIOV_VF_ONE_OF_ONE = 201,    // R200-VF-16G
  XPUML_DEVICE_MODEL_KL2_R200_SRIOV_VF_ONE_OF_TWO = 202,    // R200-VF-8G
  XPUML_DEVICE_MODEL_KL2_R200_SRIOV_VF_ONE_OF_THREE = 203,  // R200-VF-5G
  XPUML_DEVICE_MODEL_UNKNOWN = 9999,
};

inline constexpr int XPUML_TEMPERATURE_SENSOR_DIE = 0;
inline constexpr int XPUML_CLOCK_XPU = 0;

// A device handle. The header's xpumlDevice_t is a pointer to an opaque struct; a struct holding
// one pointer, passed by value, travels the same way (one integer register on x86-64 SysV and
// AAPCS64) and cannot be confused with other pointers.
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
  unsigned maxVFCount;  // XPUML_VALUE_NOT_AVAILABLE_UNSIGNED: the board has none
  std::uint64_t globalMemorySizeMB;
  std::uint64_t l3MemorySizeMB;
  std::uint64_t sn[2];
  std::uint64_t reserved[7];
};

struct xpumlMemory_t {  // bytes
  std::uint64_t pageSizeGlobalMemory;
  std::uint64_t totalGlobalMemory;
  std::uint64_t freeGlobalMemory;
  std::uint64_t usedGlobalMemory;
  std::uint64_t pageSizeL3Memory;
  std::uint64_t totalL3Memory;
  std::uint64_t freeL3Memory;
  std::uint64_t usedL3Memory;
  std::uint64_t reserved[8];
};

struct xpumlUtilization_t {  // percent
  unsigned xpu;
  unsigned memory;
  std::uint64_t reserved[15];
};

// One record of xpumlDeviceGetComputeRunningProcesses: 128 bytes, the reserved tail included.
struct xpumlProcessInfo_t {
  unsigned pid;
  std::uint64_t usedGlobalMemory;  // bytes
  std::uint64_t usedL3Memory;      // bytes
  unsigned root_ns_pid;            // the process in the root (host) PID namespace
  unsigned reserved_u32;
  std::uint64_t reserved[12];
};

// Sizes the header states ("sizeof() = 8B * 16") and the offsets its field order gives under the
// C ABI of every platform the vendor ships for (LP64: 4-byte int, 8-byte long long, natural
// alignment).
static_assert(sizeof(xpumlDevice_t) == sizeof(void*));

static_assert(sizeof(xpumlPciInfo_t) == 128);
static_assert(offsetof(xpumlPciInfo_t, domain) == 0);
static_assert(offsetof(xpumlPciInfo_t, bus) == 4);
static_assert(offsetof(xpumlPciInfo_t, device) == 8);
static_assert(offsetof(xpumlPciInfo_t, function) == 12);
static_assert(offsetof(xpumlPciInfo_t, pciDeviceId) == 16);
static_assert(offsetof(xpumlPciInfo_t, pciSubSystemId) == 20);
static_assert(offsetof(xpumlPciInfo_t, busId) == 24);
static_assert(offsetof(xpumlPciInfo_t, reserved) == 56);

static_assert(sizeof(xpumlDeviceAttributes_t) == 128);
static_assert(offsetof(xpumlDeviceAttributes_t, archId) == 0);
static_assert(offsetof(xpumlDeviceAttributes_t, boardId) == 4);
static_assert(offsetof(xpumlDeviceAttributes_t, modelId) == 8);
static_assert(offsetof(xpumlDeviceAttributes_t, clusterCount) == 12);
static_assert(offsetof(xpumlDeviceAttributes_t, sdnnCount) == 16);
static_assert(offsetof(xpumlDeviceAttributes_t, dmaEngineCount) == 20);
static_assert(offsetof(xpumlDeviceAttributes_t, decoderCount) == 24);
static_assert(offsetof(xpumlDeviceAttributes_t, encoderCount) == 28);
static_assert(offsetof(xpumlDeviceAttributes_t, imgProcCount) == 32);
static_assert(offsetof(xpumlDeviceAttributes_t, maxVFCount) == 36);
static_assert(offsetof(xpumlDeviceAttributes_t, globalMemorySizeMB) == 40);
static_assert(offsetof(xpumlDeviceAttributes_t, l3MemorySizeMB) == 48);
static_assert(offsetof(xpumlDeviceAttributes_t, sn) == 56);
static_assert(offsetof(xpumlDeviceAttributes_t, reserved) == 72);

static_assert(sizeof(xpumlMemory_t) == 128);
static_assert(offsetof(xpumlMemory_t, pageSizeGlobalMemory) == 0);
static_assert(offsetof(xpumlMemory_t, totalGlobalMemory) == 8);
static_assert(offsetof(xpumlMemory_t, freeGlobalMemory) == 16);
static_assert(offsetof(xpumlMemory_t, usedGlobalMemory) == 24);
static_assert(offsetof(xpumlMemory_t, pageSizeL3Memory) == 32);
static_assert(offsetof(xpumlMemory_t, totalL3Memory) == 40);
static_assert(offsetof(xpumlMemory_t, freeL3Memory) == 48);
static_assert(offsetof(xpumlMemory_t, usedL3Memory) == 56);
static_assert(offsetof(xpumlMemory_t, reserved) == 64);

static_assert(sizeof(xpumlUtilization_t) == 128);
static_assert(offsetof(xpumlUtilization_t, xpu) == 0);
static_assert(offsetof(xpumlUtilization_t, memory) == 4);
static_assert(offsetof(xpumlUtilization_t, reserved) == 8);

static_assert(sizeof(xpumlProcessInfo_t) == 128);
static_assert(offsetof(xpumlProcessInfo_t, pid) == 0);
static_assert(offsetof(xpumlProcessInfo_t, usedGlobalMemory) == 8);
static_assert(offsetof(xpumlProcessInfo_t, usedL3Memory) == 16);
static_assert(offsetof(xpumlProcessInfo_t, root_ns_pid) == 24);
static_assert(offsetof(xpumlProcessInfo_t, reserved_u32) == 28);
static_assert(offsetof(xpumlProcessInfo_t, reserved) == 32);

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
// The header's xpumlDeviceArchitecture_t is an unsigned int.
xpumlReturn_t xpumlDeviceGetArchitecture(xpumlDevice_t device, unsigned* arch);
xpumlReturn_t xpumlDeviceGetHostVxpuMode(xpumlDevice_t device, int* mode);
xpumlReturn_t xpumlDeviceSetSriovVfNum(xpumlDevice_t device, int vf_num);

// Only in newer libraries.
xpumlReturn_t xpumlDeviceGetName(xpumlDevice_t device, char* name, unsigned length);
// The char-device minor: the driver hands them out in steps of two, so it names nothing.
xpumlReturn_t xpumlDeviceGetMinorNumber(xpumlDevice_t device, unsigned* minor);
// The physical id: the card's node is /dev/xpu<id>.
xpumlReturn_t xpumlDeviceGetId(xpumlDevice_t device, int* id);
// Commented out in every public header: no real library is known to export it. Resolved as an
// optional symbol in case one does.
xpumlReturn_t xpumlDeviceGetUUID(xpumlDevice_t device, char* uuid, unsigned length);
const char* xpumlErrorString(xpumlReturn_t result);

// cXPU instances (the header's "Multi Instance XPU Management" group): a named instance on a
// card whose memory the driver bounds. The vendor's container CLI creates one per container,
// named by the first 12 characters of the container id, and sets its global-memory limit
// (src/cli/cxpu.c, src/nvc_info.c of zxw3221/libxpu-container). Only in libraries that export
// them; resolved as optional symbols.
//
// Where the limit applies (the header's xpumlMemoryLocation_t).
enum xpumlMemoryLocation : unsigned {
  XPUML_MEMORY_LOCATION_GLOBAL_MEMORY = 0,
  XPUML_MEMORY_LOCATION_L3_MEMORY = 1,
  XPUML_MEMORY_LOCATION_COUNT = 2,
};
// A limit of all ones means none: the vendor's CLI then creates no instance at all.
inline constexpr unsigned long long XPUML_CXPU_MEM_UNLIMIT = ~0ULL;
// The longest instance id, without its terminating NUL.
inline constexpr unsigned XPUML_CXPU_INST_ID_LEN = 12;
// The header passes the id as a non-const char*; the library is not known to write to it, but
// callers hand it a buffer of their own all the same.
xpumlReturn_t xpumlDeviceCreateCxpuInstance(xpumlDevice_t device, char* instance_id);
xpumlReturn_t xpumlDeviceSetCxpuInstanceMemoryLimit(xpumlDevice_t device, char* instance_id,
                                                    unsigned memory_type,
                                                    unsigned long long limit_bytes);
xpumlReturn_t xpumlDeviceDestroyCxpuInstance(xpumlDevice_t device, char* instance_id);

}  // extern "C"
