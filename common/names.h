// Every bus name, object path, interface, error and metric key of the xpud D-Bus API.
// These strings are contracts (see dbus/*.xml); nothing else in the tree spells them out.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace xpu::names {

inline constexpr std::string_view kBusName = "com.kunlunxin.xpud1";
inline constexpr std::string_view kManagerPath = "/com/kunlunxin/xpud1";
inline constexpr std::string_view kDevicePathPrefix = "/com/kunlunxin/xpud1/devices/xpu";

inline constexpr std::string_view kManagerInterface = "com.kunlunxin.xpud1.Manager";
inline constexpr std::string_view kDeviceInterface = "com.kunlunxin.xpud1.Device";
inline constexpr std::string_view kSimulatorInterface = "com.kunlunxin.xpud1.Simulator";

// Manager methods that more than one component names (the API proxy's allow-list among them).
namespace member {
inline constexpr std::string_view kListDevices = "ListDevices";
inline constexpr std::string_view kGetMetrics = "GetMetrics";
inline constexpr std::string_view kGetProcesses = "GetProcesses";
inline constexpr std::string_view kConfigureVirtualFunctions = "ConfigureVirtualFunctions";
inline constexpr std::string_view kCreateInstance = "CreateInstance";
inline constexpr std::string_view kDestroyInstance = "DestroyInstance";
inline constexpr std::string_view kListInstances = "ListInstances";
inline constexpr std::string_view kCreateShareInstance = "CreateShareInstance";
inline constexpr std::string_view kResetDevice = "ResetDevice";
inline constexpr std::array<std::string_view, 9> kManager = {
    kListDevices,    kGetMetrics,      kGetProcesses,  kConfigureVirtualFunctions,
    kCreateInstance, kDestroyInstance, kListInstances, kCreateShareInstance,
    kResetDevice};
}  // namespace member

// Every signal xpud sends, as interface and member: its own (dbus/*.xml) and the standard ones
// its objects emit (sdbus-c++'s Properties and ObjectManager adaptors). Whoever relays or acts on
// xpud's signals takes these and nothing else (common/xpud_signals.h).
namespace signals {
struct Signal {
  std::string_view interface;
  std::string_view member;
};
inline constexpr std::string_view kDeviceHealthChanged = "DeviceHealthChanged";
inline constexpr std::string_view kPropertiesChanged = "PropertiesChanged";
inline constexpr std::string_view kInterfacesAdded = "InterfacesAdded";
inline constexpr std::string_view kInterfacesRemoved = "InterfacesRemoved";
}  // namespace signals

// Properties clients read (dbus/*.xml defines them; tests/common/names_test.cpp checks that
// every name here is in the XML of its interface).
namespace property {
// com.kunlunxin.xpud1.Manager
inline constexpr std::string_view kVersion = "Version";
inline constexpr std::string_view kBackend = "Backend";
inline constexpr std::string_view kLibraryPath = "LibraryPath";
inline constexpr std::string_view kDriverVersion = "DriverVersion";
inline constexpr std::string_view kDeviceCount = "DeviceCount";
inline constexpr std::string_view kHealthyDeviceCount = "HealthyDeviceCount";
inline constexpr std::string_view kDriverStalled = "DriverStalled";
inline constexpr std::string_view kClusterReconfigureAllowed = "ClusterReconfigureAllowed";
inline constexpr std::string_view kInstancesSupported = "InstancesSupported";
inline constexpr std::string_view kInstanceHook = "InstanceHook";
inline constexpr std::string_view kShareInstancesSupported = "ShareInstancesSupported";
// com.kunlunxin.xpud1.Device
inline constexpr std::string_view kIndex = "Index";
inline constexpr std::string_view kName = "Name";
inline constexpr std::string_view kUuid = "Uuid";
inline constexpr std::string_view kSerial = "Serial";
inline constexpr std::string_view kModel = "Model";
inline constexpr std::string_view kPciBusId = "PciBusId";
inline constexpr std::string_view kPcieRoot = "PcieRoot";
inline constexpr std::string_view kNumaNode = "NumaNode";
inline constexpr std::string_view kMemoryTotalBytes = "MemoryTotalBytes";
inline constexpr std::string_view kDeviceNodes = "DeviceNodes";
inline constexpr std::string_view kLinkedDevices = "LinkedDevices";
inline constexpr std::string_view kHealth = "Health";
inline constexpr std::string_view kHealthReason = "HealthReason";
inline constexpr std::string_view kHealthReasonKind = "HealthReasonKind";
inline constexpr std::string_view kHealthTransitions = "HealthTransitions";
inline constexpr std::string_view kIsVirtualFunction = "IsVirtualFunction";
inline constexpr std::string_view kSriovEnabled = "SriovEnabled";
inline constexpr std::string_view kPhysicalFunction = "PhysicalFunction";
inline constexpr std::string_view kPcieLinkSpeed = "PcieLinkSpeed";
inline constexpr std::string_view kPcieLinkMaxSpeed = "PcieLinkMaxSpeed";
inline constexpr std::string_view kPcieLinkWidth = "PcieLinkWidth";
inline constexpr std::string_view kPcieLinkMaxWidth = "PcieLinkMaxWidth";
inline constexpr std::string_view kPcieAerErrors = "PcieAerErrors";
inline constexpr std::string_view kHealthWarnings = "HealthWarnings";
inline constexpr std::string_view kResets = "Resets";

inline constexpr std::array<std::string_view, 11> kManager = {kVersion,
                                                              kBackend,
                                                              kLibraryPath,
                                                              kDriverVersion,
                                                              kDeviceCount,
                                                              kHealthyDeviceCount,
                                                              kDriverStalled,
                                                              kClusterReconfigureAllowed,
                                                              kInstancesSupported,
                                                              kInstanceHook,
                                                              kShareInstancesSupported};
inline constexpr std::array<std::string_view, 25> kDevice = {kIndex,
                                                             kName,
                                                             kUuid,
                                                             kSerial,
                                                             kModel,
                                                             kPciBusId,
                                                             kPcieRoot,
                                                             kNumaNode,
                                                             kMemoryTotalBytes,
                                                             kDeviceNodes,
                                                             kLinkedDevices,
                                                             kHealth,
                                                             kHealthReason,
                                                             kHealthReasonKind,
                                                             kHealthTransitions,
                                                             kIsVirtualFunction,
                                                             kSriovEnabled,
                                                             kPhysicalFunction,
                                                             kPcieLinkSpeed,
                                                             kPcieLinkMaxSpeed,
                                                             kPcieLinkWidth,
                                                             kPcieLinkMaxWidth,
                                                             kPcieAerErrors,
                                                             kHealthWarnings,
                                                             kResets};
}  // namespace property

// Every error xpud answers with starts so (the six below).
inline constexpr std::string_view kErrorPrefix = "com.kunlunxin.xpud1.Error.";
inline constexpr std::string_view kErrorNoSuchInstance = "com.kunlunxin.xpud1.Error.NoSuchInstance";
// A cXPU instance that would exceed what is granted: its share is bounded by another
// container's instance, or the card's instances would hold more than its memory.
inline constexpr std::string_view kErrorInUse = "com.kunlunxin.xpud1.Error.InUse";
inline constexpr std::string_view kErrorNoSuchDevice = "com.kunlunxin.xpud1.Error.NoSuchDevice";
inline constexpr std::string_view kErrorNotSupported = "com.kunlunxin.xpud1.Error.NotSupported";
inline constexpr std::string_view kErrorBackend = "com.kunlunxin.xpud1.Error.Backend";
inline constexpr std::string_view kErrorInvalidArgument =
    "com.kunlunxin.xpud1.Error.InvalidArgument";

// The message bus's own names (the D-Bus specification's, and sd-bus's Local interface): the bus
// driver, the standard interfaces and errors xpud, its clients and the API proxy call, answer or
// test for. They are in no XML of xpud's.
namespace bus {
inline constexpr std::string_view kDriverName = "org.freedesktop.DBus";
inline constexpr std::string_view kDriverPath = "/org/freedesktop/DBus";
inline constexpr std::string_view kPropertiesInterface = "org.freedesktop.DBus.Properties";
inline constexpr std::string_view kObjectManagerInterface = "org.freedesktop.DBus.ObjectManager";
inline constexpr std::string_view kIntrospectableInterface = "org.freedesktop.DBus.Introspectable";
inline constexpr std::string_view kPeerInterface = "org.freedesktop.DBus.Peer";
inline constexpr std::string_view kLocalInterface = "org.freedesktop.DBus.Local";
// The bus driver's broadcast of a name's new owner (the D-Bus specification, "Message Bus
// Signals"), and the call that asks for the owner.
inline constexpr std::string_view kNameOwnerChanged = "NameOwnerChanged";
inline constexpr std::string_view kGetNameOwner = "GetNameOwner";

inline constexpr std::string_view kErrorPrefix = "org.freedesktop.DBus.Error.";
inline constexpr std::string_view kErrorAccessDenied = "org.freedesktop.DBus.Error.AccessDenied";
inline constexpr std::string_view kErrorDisconnected = "org.freedesktop.DBus.Error.Disconnected";
inline constexpr std::string_view kErrorFailed = "org.freedesktop.DBus.Error.Failed";
inline constexpr std::string_view kErrorInvalidArgs = "org.freedesktop.DBus.Error.InvalidArgs";
inline constexpr std::string_view kErrorLimitsExceeded =
    "org.freedesktop.DBus.Error.LimitsExceeded";
inline constexpr std::string_view kErrorNameHasNoOwner =
    "org.freedesktop.DBus.Error.NameHasNoOwner";
inline constexpr std::string_view kErrorNoReply = "org.freedesktop.DBus.Error.NoReply";
inline constexpr std::string_view kErrorServiceUnknown =
    "org.freedesktop.DBus.Error.ServiceUnknown";
inline constexpr std::string_view kErrorTimeout = "org.freedesktop.DBus.Error.Timeout";
inline constexpr std::string_view kErrorUnknownMethod = "org.freedesktop.DBus.Error.UnknownMethod";
inline constexpr std::string_view kErrorUnknownObject = "org.freedesktop.DBus.Error.UnknownObject";
}  // namespace bus

namespace signals {
inline constexpr std::array<Signal, 4> kXpud = {{
    {kManagerInterface, kDeviceHealthChanged},
    {bus::kPropertiesInterface, kPropertiesChanged},
    {bus::kObjectManagerInterface, kInterfacesAdded},
    {bus::kObjectManagerInterface, kInterfacesRemoved},
}};
}  // namespace signals

// com.kunlunxin.xpud1.Vfio, on the manager's path: the Kunlunxin functions on vfio-pci, for
// virtual machines, and the root-only moves there and back (dbus/com.kunlunxin.xpud1.Vfio.xml).
namespace vfio {
inline constexpr std::string_view kInterface = "com.kunlunxin.xpud1.Vfio";
inline constexpr std::string_view kBind = "Bind";
inline constexpr std::string_view kUnbind = "Unbind";
inline constexpr std::string_view kDevices = "Devices";  // property
// The cluster's resource for functions on vfio-pci (the device plugin's, and the CDI kind xpud
// writes them under). Underscores, not '-': KubeVirt reads the function's address from
// PCI_RESOURCE_<the name upper-cased, '/' and '.' made '_'> (pkg/util ResourceNameToEnvVar),
// which leaves '-' in; a '-' in an environment name cannot be read from a shell.
inline constexpr std::string_view kResourceName = "kunlunxin.com/xpu_vfio";
inline constexpr std::string_view kCdiKind = "kunlunxin.com/xpu_vfio";
inline constexpr std::string_view kCdiFile = "kunlunxin-xpu-vfio.json";
// KubeVirt's prefix (kubevirt.io/api core/v1 PCIResourcePrefix).
inline constexpr std::string_view kPciResourcePrefix = "PCI_RESOURCE";
// PCI_RESOURCE_<resource>: the variable KubeVirt's virt-launcher reads the PCI addresses of a
// resource from (comma-separated), as its own device plugin and NVIDIA's set it.
inline std::string pci_resource_env(std::string_view resource_name) {
  std::string name(kPciResourcePrefix);
  name += '_';
  for (char c : resource_name)
    name += (c == '/' || c == '.') ? '_' : (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
  return name;
}
// An IOMMU group as /dev/vfio/<group> names it: a decimal number (bounded, so that a name from
// the bus cannot make a path of its choosing).
inline bool is_iommu_group(std::string_view group) {
  if (group.empty() || group.size() > 10) return false;
  for (char c : group)
    if (c < '0' || c > '9') return false;
  return true;
}
// A function's device in xpud's VFIO CDI spec: "kunlunxin.com/xpu_vfio=0000:3b:00.0".
inline std::string cdi_qualified_name(std::string_view pci_bus_id) {
  return std::string(kCdiKind) + "=" + std::string(pci_bus_id);
}
}  // namespace vfio

inline constexpr std::string_view kHealthy = "Healthy";
inline constexpr std::string_view kUnhealthy = "Unhealthy";

// Device.HealthReasonKind: the cause of Unhealthy as one of a few fixed words (empty while
// Healthy), for clients that group or label by cause; HealthReason keeps the full text.
namespace reason_kind {
inline constexpr std::string_view kDriverFault = "driver_fault";    // the driver reports the fault
inline constexpr std::string_view kReadFailures = "read_failures";  // reads failed too many times
inline constexpr std::string_view kDriverStalled = "driver_stalled";  // a driver call hung too long
// the card kept its memory with no process on it (xpud/sampling/release_check.h)
inline constexpr std::string_view kMemoryNotReleased = "memory_not_released";
// The kernel counted a new fatal PCIe error of the card (AER).
inline constexpr std::string_view kPcieFatalError = "pcie_fatal_error";
// A new nonfatal PCIe error, or a link slower or narrower than the card can do: a warning by
// default ([pcie] nonfatal, downtrain), these kinds when xpud.conf makes them take the card out.
inline constexpr std::string_view kPcieNonfatalError = "pcie_nonfatal_error";
inline constexpr std::string_view kPcieLinkDowntrained = "pcie_link_downtrained";
// The card was reset ([recovery]) and is still not Healthy: the reset did not cure it
// (xpud/recovery/card_recovery.h).
inline constexpr std::string_view kResetFailed = "reset_failed";
}  // namespace reason_kind

// The keys of Device.Resets: what became of each reset of the card xpud was asked for or
// started by itself ([recovery]).
namespace reset_result {
// Reset, and Healthy again within [recovery] check_timeout_ms.
inline constexpr std::string_view kSucceeded = "succeeded";
// The kernel or the driver refused the reset, or the card was still not Healthy after it.
inline constexpr std::string_view kFailed = "failed";
// Not attempted: a process had the card open or the driver listed one, the hour's resets were
// used up, a reset of the card was under way, or resets are off.
inline constexpr std::string_view kRefused = "refused";
inline constexpr std::array<std::string_view, 3> kAll = {kSucceeded, kFailed, kRefused};
}  // namespace reset_result

// The keys of Device.PcieAerErrors: the severities the kernel counts AER messages by
// (aer_dev_correctable, aer_dev_nonfatal, aer_dev_fatal).
namespace aer_severity {
inline constexpr std::string_view kCorrectable = "correctable";
inline constexpr std::string_view kNonfatal = "nonfatal";
inline constexpr std::string_view kFatal = "fatal";
}  // namespace aer_severity

inline constexpr std::string_view kDeviceNodePrefix = "/dev/xpu";
inline constexpr std::string_view kControlNode = "/dev/xpuctrl";

// Container Device Interface: the kind of xpud's spec, and the device names in it (a card by
// index or UUID, and every card as `all`), fully qualified as runtimes and the kubelet take them.
namespace cdi {
inline constexpr std::string_view kKind = "kunlunxin.com/xpu";
inline constexpr std::string_view kAllDevices = "all";
inline std::string qualified_name(std::string_view device) {
  return std::string(kKind) + "=" + std::string(device);
}
// Whether `name` may be a CDI device name: letters, digits, '-', '_', '.', ':', starting and
// ending with a letter or digit (the rule of the CDI library's parser).
inline bool is_device_name(std::string_view name) {
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (name.empty() || !alnum(name.front()) || !alnum(name.back())) return false;
  for (char c : name)
    if (!alnum(c) && c != '-' && c != '_' && c != '.' && c != ':') return false;
  return true;
}
// Whether a card's UUID can be its own name in xpud's spec: a device name that is neither "all"
// nor all digits (an index's name). Otherwise the spec names the card by index only, and so must
// everything that refers to it.
inline bool is_uuid_name(std::string_view uuid) {
  if (!is_device_name(uuid) || uuid == kAllDevices) return false;
  for (char c : uuid)
    if (c < '0' || c > '9') return true;
  return false;
}
}  // namespace cdi

// The environment a container gets with its cards, from the device plugin and the CDI spec
// alike: host indices (comma-separated, ascending) and the cards' UUIDs in the same order.
inline constexpr std::string_view kVisibleDevicesEnv = "XPU_VISIBLE_DEVICES";
// The same indices for the vendor's container runtime (xpu-container-runtime), which injects the
// cards this names into every container it runs; the vendor's base images set it to "all", so
// without it a pod on a node whose default runtime is the vendor's sees every card. Its value
// forms (indices, all, none, void/empty/unset) and why indices: docs/hardware.md.
inline constexpr std::string_view kVendorRuntimeVisibleDevicesEnv = "CXPU_VISIBLE_DEVICES";
inline constexpr std::string_view kUuidsEnv = "KUNLUNXIN_XPU_UUIDS";
// A memory-bounded share: the bytes the container may use, in all, of the cards it sees. The
// vendor's runtime hook reads it (src/cli/cxpu.c of zxw3221/libxpu-container, with atoll) and
// bounds each card's cXPU instance to it divided by the number of cards: docs/hardware.md.
inline constexpr std::string_view kVendorRuntimeMemoryLimitEnv = "CXPU_CONTAINER_MEMORY_LIMIT";

// Keys of Manager.GetMetrics, in base units.
namespace metric {
inline constexpr std::string_view kUtilization = "utilization_ratio";
inline constexpr std::string_view kMemoryUtilization = "memory_utilization_ratio";
inline constexpr std::string_view kMemoryUsed = "memory_used_bytes";
inline constexpr std::string_view kMemoryTotal = "memory_total_bytes";
inline constexpr std::string_view kL3MemoryUsed = "l3_memory_used_bytes";
inline constexpr std::string_view kL3MemoryTotal = "l3_memory_total_bytes";
inline constexpr std::string_view kTemperature = "temperature_celsius";
inline constexpr std::string_view kPower = "power_watts";
inline constexpr std::string_view kClock = "clock_hertz";
inline constexpr std::string_view kProcessCount = "process_count";

inline constexpr std::array<std::string_view, 10> kAll = {
    kUtilization,   kMemoryUtilization, kMemoryUsed, kMemoryTotal, kL3MemoryUsed,
    kL3MemoryTotal, kTemperature,       kPower,      kClock,       kProcessCount};

// The card's PCIe link and AER error counts as the kernel reports them (sysfs, not the driver):
// also in GetMetrics, beside the keys above. Link speeds in transfers per second, widths in
// lanes, the error counts since the PCI function appeared (boot or re-enumeration).
inline constexpr std::string_view kPcieLinkSpeed = "pcie_link_speed_transfers_per_second";
inline constexpr std::string_view kPcieLinkMaxSpeed = "pcie_link_max_speed_transfers_per_second";
inline constexpr std::string_view kPcieLinkWidth = "pcie_link_width_lanes";
inline constexpr std::string_view kPcieLinkMaxWidth = "pcie_link_max_width_lanes";
inline constexpr std::string_view kPcieAerCorrectable = "pcie_aer_correctable_errors";
inline constexpr std::string_view kPcieAerNonfatal = "pcie_aer_nonfatal_errors";
inline constexpr std::string_view kPcieAerFatal = "pcie_aer_fatal_errors";
inline constexpr std::array<std::string_view, 7> kPcie = {
    kPcieLinkSpeed,      kPcieLinkMaxSpeed, kPcieLinkWidth, kPcieLinkMaxWidth,
    kPcieAerCorrectable, kPcieAerNonfatal,  kPcieAerFatal};
}  // namespace metric

inline std::string device_path(unsigned index) {
  return std::string(kDevicePathPrefix) + std::to_string(index);
}
inline std::string device_name(unsigned index) {
  return "xpu" + std::to_string(index);
}
inline std::string device_node(unsigned index) {
  return std::string(kDeviceNodePrefix) + std::to_string(index);
}

}  // namespace xpu::names
