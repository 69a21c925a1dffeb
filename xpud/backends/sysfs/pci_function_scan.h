// Finds the Kunlunxin XPU functions among <root>/sys/bus/pci/devices/* and reads what sysfs
// says about each. Every other function costs one small read (its vendor file), so a scan stays
// cheap on hosts with hundreds of PCI functions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "xpud/backends/pci_ids.h"

namespace xpud::sysfs {

// Highest N accepted in an xpuN name the driver publishes; larger numbers are not real nodes.
inline constexpr unsigned kMaxDeviceNodeNumber = 9999;

struct PciFunction {
  std::string pci_bus_id;     // normalised "dddd:bb:dd.f"
  std::filesystem::path dir;  // the entry under sys/bus/pci/devices (a symlink in real sysfs)
  pci::PciModel model;
  std::uint16_t device_id = 0;                    // the vendor is always Kunlunxin's
  std::optional<std::uint16_t> subsystem_vendor;  // unset when unreadable
  std::optional<std::uint16_t> subsystem_device;
  int numa_node = -1;
  std::string pcie_root;                 // "pci0000:00" (pcie_root.h); empty when unknown
  std::string driver;                    // basename of the driver link; empty when bound to none
  bool has_physfn_link = false;          // SR-IOV virtual functions link to their physical function
  std::string physfn_bus_id;             // where that link leads, when it names a PCI address
  std::optional<unsigned> sriov_numvfs;  // PFs with SR-IOV capability
  std::optional<unsigned> sriov_totalvfs;
  // N of every class device "xpuN" the driver created under this function (<dir>/xpuN or
  // <dir>/<class>/xpuN), ascending: the kernel's own record of which /dev nodes it backs.
  std::vector<unsigned> published_nodes;

  bool is_virtual_function() const { return model.is_virtual_function || has_physfn_link; }
};

// The Kunlunxin XPU functions under devices_dir, ordered by bus id. Fails only when the
// directory itself cannot be listed; unreadable or malformed entries are skipped (debug line).
xpu::Result<std::vector<PciFunction>> scan_kunlunxin_functions(
    const std::filesystem::path& devices_dir);

// N of every class device "xpuN" the driver created under the PCI function at function_dir
// (<dir>/xpuN or <dir>/<class>/xpuN), ascending; empty when there is none or the directory cannot
// be listed. The xpuml backend names cards by it when the library has no physical id.
std::vector<unsigned> published_device_nodes(const std::filesystem::path& function_dir);

// N for a name "xpuN" (N without leading zeros, at most kMaxDeviceNodeNumber).
std::optional<unsigned> parse_device_node_name(std::string_view name);

}  // namespace xpud::sysfs
