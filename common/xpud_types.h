// The data of the xpud D-Bus API as its clients see it: a card, the manager, metrics, processes,
// instances, the watcher's view, and where to reach xpud (ClientOptions). Plain values with no bus
// behind them, so code that only reads cards (the shim's roles, their tests) and the client's own
// parts (connection, properties, watcher) include these without the client.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace xpu {

struct DeviceInfo {
  unsigned index = 0;
  std::string name;  // "xpu0"
  std::string uuid;
  std::string serial;
  std::string model;
  std::string pci_bus_id;
  // The PCIe root complex, "pci0000:00"; empty when unknown or from an older xpud without it.
  std::string pcie_root;
  int numa_node = -1;
  std::uint64_t memory_total_bytes = 0;
  std::vector<std::string> device_nodes;
  std::vector<unsigned> linked_devices;
  bool healthy = false;
  std::string health_reason;
  std::string health_reason_kind;  // xpu::names::reason_kind::*; empty while healthy or unknown
  // Health -> how often the card became it (an older xpud without the property: empty).
  std::map<std::string, std::uint64_t> health_transitions;
  bool is_virtual_function = false;
  // A physical function with its SR-IOV virtual functions on: no compute of its own, so the
  // cluster offers it to no pod (its virtual functions are offered instead). An older xpud
  // without the property: false.
  bool sriov_enabled = false;
  // A virtual function's physical function, by PCI bus id; empty for a PF (and from an older
  // xpud without the property).
  std::string physical_function;
  // What is wrong with the card without making it Unhealthy (a downtrained PCIe link, a new
  // nonfatal PCIe error), by kind; empty when nothing is (and from an older xpud).
  std::map<std::string, std::string> health_warnings;
  // What became of the card's resets, by xpu::names::reset_result (an older xpud: empty).
  std::map<std::string, std::uint64_t> resets;

  bool operator==(const DeviceInfo&) const = default;
};

struct ManagerInfo {
  std::string version;
  std::string backend;
  std::string library_path;  // LibraryPath; empty when none is in use or xpud predates it
  std::string driver_version;
  unsigned device_count = 0;
  unsigned healthy_device_count = 0;
  // InstanceHook: the command an OCI hook runs to reach xpud about cXPU instances; empty when
  // xpud makes none (or predates the property).
  std::vector<std::string> instance_hook;
  // ShareInstancesSupported: the hook takes a memory share and its claim (false when xpud
  // predates it).
  bool share_instances_supported = false;

  bool operator==(const ManagerInfo&) const = default;
};

struct DeviceMetrics {
  unsigned index = 0;
  std::map<std::string, double> values;  // xpu::names::metric keys; absent when unreadable
};

struct MetricsSnapshot {
  std::uint64_t timestamp_usec = 0;
  std::vector<DeviceMetrics> devices;
};

// A process using a card (Manager.GetProcesses).
struct CardProcess {
  unsigned pid = 0;  // host PID
  std::uint64_t memory_used_bytes = 0;
  std::string pod_uid;       // empty when not in a Kubernetes pod
  std::string container_id;  // empty when not in a container
};

struct DeviceProcesses {
  unsigned index = 0;
  std::vector<CardProcess> processes;
};

struct ProcessSnapshot {
  std::uint64_t timestamp_usec = 0;
  std::vector<DeviceProcesses> devices;  // only cards whose backend lists processes
};

// A cXPU instance xpud made (Manager.ListInstances).
struct CxpuInstanceInfo {
  unsigned index = 0;  // the card's
  std::string id;
  std::uint64_t memory_limit_bytes = 0;
  std::string owner{};  // "<namespace>/<pod>/<container>", or empty
};

// A Kunlunxin function on vfio-pci, for virtual machines (one entry of Vfio.Devices).
struct VfioFunctionInfo {
  std::string pci_bus_id;   // "0000:3b:00.0"
  std::string pci_id;       // "1d22:3684"
  std::string iommu_group;  // "12": /dev/vfio/12
  std::string model;
  bool is_virtual_function = false;
  std::string physical_function;  // a VF's PF; empty for a PF
  int numa_node = -1;

  bool operator==(const VfioFunctionInfo&) const = default;
};

// What the watcher knows after each change.
struct DeviceView {
  bool xpud_present = false;        // xpud owns its name and answered
  ManagerInfo manager;              // valid when xpud_present
  std::vector<DeviceInfo> devices;  // ordered by index; last known list when !xpud_present
  // The functions on vfio-pci (Vfio.Devices), by PCI address; empty from an xpud without the
  // interface. Last known list when !xpud_present.
  std::vector<VfioFunctionInfo> vfio_functions{};

  bool operator==(const DeviceView&) const = default;
};

struct ClientOptions {
  std::optional<std::string> bus_address;  // nullopt: the system bus
  std::chrono::milliseconds call_timeout{5000};
};

}  // namespace xpu
