// What xpud knows about a card: its identity (constant while the card is present) and one
// reading of its metrics.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/names.h"

namespace xpud {

struct DeviceIdentity {
  unsigned index = 0;                    // host index: /dev/xpu<index>
  std::string uuid;                      // stable across reboots; what Kubernetes sees as device ID
  std::string serial;                    // empty when unknown
  std::string model;                     // "R200", ...; "unknown" when not identifiable
  std::string pci_bus_id;                // "0000:3b:00.0": lower case, 4-digit domain
  std::string pcie_root;                 // "pci0000:00": the root complex; empty when unknown
  int numa_node = -1;                    // -1 when unknown
  std::uint64_t memory_total_bytes = 0;  // 0 when unknown
  std::vector<std::string> device_nodes;  // "/dev/xpu0", "/dev/xpuctrl"
  std::vector<unsigned> linked_devices;   // indices of directly linked cards
  bool is_virtual_function = false;
  // A physical function whose SR-IOV virtual functions are enabled (the library's
  // XPUML_HOST_VXPU_MODE_SRIOV_ON; sysfs: sriov_numvfs > 0): it has no compute of its own, so it
  // stays visible to operators but is offered to no pod; its VFs are (docs/hardware.md).
  bool sriov_enabled = false;
  // A virtual function's physical function, by PCI bus id (sysfs: its `physfn` link); empty for
  // a physical function, and where sysfs does not say.
  std::string physical_function;

  bool operator==(const DeviceIdentity&) const = default;
};

// A process using a card, as the driver reports it.
struct ProcessUsage {
  unsigned pid = 0;                     // in the host's (xpud's) PID namespace
  std::uint64_t memory_used_bytes = 0;  // card global memory
  bool operator==(const ProcessUsage&) const = default;
};

// A card's PCIe link and its AER error counters as the kernel reports them (sysfs; the sim
// backend simulates them): xpud/backends/pcie_link.h. A field is nullopt when unknown (the file is
// missing or says nothing usable).
struct PcieLinkState {
  std::optional<std::uint64_t> speed;      // transfers per second: 16.0 GT/s is 16000000000
  std::optional<std::uint64_t> max_speed;  // the fastest the function can do
  std::optional<unsigned> width;           // lanes
  std::optional<unsigned> max_width;
  // Error messages the function sent since it appeared (boot, or its last re-enumeration).
  std::optional<std::uint64_t> aer_correctable;
  std::optional<std::uint64_t> aer_nonfatal;
  std::optional<std::uint64_t> aer_fatal;

  bool operator==(const PcieLinkState&) const = default;
};

// Calls visit(GetMetrics key, field) for each field of a PcieLinkState (const or not): the one
// table of which key holds which figure (names.h, metric::kPcie).
template <typename State, typename Visit>
void visit_pcie_fields(State& pcie, Visit visit) {
  namespace metric = xpu::names::metric;
  visit(metric::kPcieLinkSpeed, pcie.speed);
  visit(metric::kPcieLinkMaxSpeed, pcie.max_speed);
  visit(metric::kPcieLinkWidth, pcie.width);
  visit(metric::kPcieLinkMaxWidth, pcie.max_width);
  visit(metric::kPcieAerCorrectable, pcie.aer_correctable);
  visit(metric::kPcieAerNonfatal, pcie.aer_nonfatal);
  visit(metric::kPcieAerFatal, pcie.aer_fatal);
}

// One sampling of one card. Metric keys are xpu::names::metric::*, in base units; a metric the
// backend could not read is absent (never 0).
struct DeviceReading {
  std::map<std::string, double> metrics;
  // The driver says the card is unusable (state ERROR / IN_EXCEPTION / IN_RESET, lost...):
  // the card is Unhealthy for this reason right away.
  std::optional<std::string> fault;
  // Nothing useful could be read this time (call failed or timed out). One failure is noise;
  // the health monitor turns repeated ones into Unhealthy.
  std::optional<std::string> read_error;
  // The processes using the card; nullopt when the backend cannot list them (sysfs, sim) or the
  // list could not be read this time.
  std::optional<std::vector<ProcessUsage>> processes;
  // The card is no longer where discovery found it (its sysfs entry vanished, the library says
  // it is lost), or the backend has something new to discover (backend=auto's library became
  // ready): the sampler runs discovery again instead of waiting for an event or the rescan.
  bool gone = false;
  // The card's PCIe link and AER counters this time; all unknown where the backend cannot tell.
  PcieLinkState pcie{};
};

}  // namespace xpud
