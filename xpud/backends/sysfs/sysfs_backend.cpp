#include "xpud/backends/sysfs/sysfs_backend.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/names.h"
#include "xpud/backends/device_uuid.h"
#include "xpud/backends/pcie_link.h"
#include "xpud/backends/sriov_numvfs.h"
#include "xpud/backends/sysfs/device_numbering.h"
#include "xpud/backends/sysfs/driver_version.h"
#include "xpud/backends/sysfs/pci_function_scan.h"
#include "xpud/backends/sysfs/probe_errors.h"
#include "xpud/backends/topology_links.h"
#include "xpud/backends/virtual_functions.h"

namespace xpud {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kDriverName = "kunlun";

// "/dev/xpu0" under root; root / "/dev/xpu0" would drop the root.
fs::path under_root(const fs::path& root, std::string_view absolute) {
  return root / fs::path(absolute).relative_path();
}

bool exists_under(const fs::path& root, std::string_view absolute) {
  std::error_code ec;
  return fs::exists(under_root(root, absolute), ec);
}

// Without readable subsystem ids the board is unknown: no table entry can fit it.
topology::CardKey topology_key(const sysfs::PciFunction& function) {
  topology::CardKey key;
  if (function.subsystem_vendor && function.subsystem_device)
    key.pci = topology::PciMatch{pci::kVendorKunlunxin, function.device_id,
                                 *function.subsystem_vendor, *function.subsystem_device};
  return key;
}

bool contains(const std::vector<std::string>& items, std::string_view item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

// Owned by the sampler's driver thread, like every Backend (see backend.h).
class SysfsBackend final : public Backend, public VirtualFunctionControl {
 public:
  SysfsBackend(fs::path root, std::shared_ptr<const topology::LinkTable> links)
      : root_(std::move(root)),
        devices_dir_(root_ / "sys/bus/pci/devices"),
        probe_error_file_(root_ / "proc/xpu/probe_error"),
        links_(std::move(links)) {}

  std::string_view name() const override { return "sysfs"; }

  std::string driver_version() override { return sysfs::read_driver_version(root_); }

  xpu::Result<std::vector<DeviceIdentity>> discover() override {
    auto scanned = sysfs::scan_kunlunxin_functions(devices_dir_);
    if (!scanned.ok()) return xpu::Error{scanned.error()};
    auto failures = sysfs::read_probe_errors(probe_error_file_);

    std::vector<sysfs::PciFunction> served;
    std::map<std::string, std::string> ignored;
    for (auto& function : *scanned) {
      // A function the driver did not take (unbound, or given to vfio-pci for a VM) has no
      // /dev/xpuN on this host; one it failed to probe is still ours, reported as faulty.
      if (function.driver == kDriverName || failures.contains(function.pci_bus_id) ||
          !function.published_nodes.empty())
        served.push_back(std::move(function));
      else
        ignored.emplace(function.pci_bus_id, function.driver);
    }
    log_ignored_functions(ignored);
    log_sriov_changes(served);

    const bool has_control_node = exists_under(root_, xpu::names::kControlNode);
    std::vector<DeviceIdentity> devices;
    std::map<std::string, fs::path> function_dirs;
    std::vector<topology::Card> physical_cards;
    for (const auto& slot : sysfs::assign_device_slots(served)) {
      const auto& function = served[slot.function];
      DeviceIdentity device;
      device.index = slot.index;
      device.uuid = derived_device_uuid(function.pci_bus_id, function.model.model, slot.chip);
      device.model = function.model.model;
      device.pci_bus_id = function.pci_bus_id;
      device.pcie_root = function.pcie_root;
      device.numa_node = function.numa_node;
      device.is_virtual_function = function.is_virtual_function();
      device.physical_function = function.physfn_bus_id;
      // Enabled VFs leave the PF without compute of its own (docs/hardware.md, SR-IOV); an
      // unreadable or malformed count reads as none.
      device.sriov_enabled = !device.is_virtual_function && function.sriov_numvfs.value_or(0) > 0;
      std::string node = xpu::names::device_node(slot.index);
      if (exists_under(root_, node)) device.device_nodes.push_back(std::move(node));
      if (has_control_node) device.device_nodes.emplace_back(xpu::names::kControlNode);
      function_dirs.emplace(function.pci_bus_id, function.dir);
      if (!device.is_virtual_function)
        physical_cards.push_back(
            topology::Card{device.index, device.pci_bus_id, device.model, topology_key(function)});
      devices.push_back(std::move(device));
    }
    // Sysfs has no link information of its own: the table is the only source.
    auto linked = links_.assign(physical_cards);
    for (auto& device : devices)
      if (auto found = linked.find(device.index); found != linked.end())
        device.linked_devices = found->second;
    function_dirs_ = std::move(function_dirs);
    return devices;
  }

  VirtualFunctionControl* virtual_functions() override { return this; }

  std::optional<DriverChangeError> set_virtual_function_count(const DeviceIdentity& device,
                                                              unsigned count) override {
    const std::string subject =
        xpu::names::device_name(device.index) + " (" + device.pci_bus_id + ")";
    auto known = function_dirs_.find(device.pci_bus_id);
    if (known == function_dirs_.end())
      return DriverChangeError{DriverChangeError::Kind::NoSuchDevice,
                               subject + " is gone from sysfs"};
    if (device.is_virtual_function)
      return DriverChangeError{DriverChangeError::Kind::NotSupported,
                               subject + " is a virtual function; configure its physical function"};
    return sysfs::write_sriov_numvfs(known->second, subject, count);
  }

  DeviceReading read(const DeviceIdentity& device) override {
    DeviceReading reading;
    auto known = function_dirs_.find(device.pci_bus_id);
    std::error_code ec;
    if (known == function_dirs_.end() || !fs::exists(known->second, ec)) {
      reading.read_error =
          ec ? "cannot check device " + device.pci_bus_id + " in sysfs: " + ec.message()
             : "device " + device.pci_bus_id + " is gone from sysfs";
      reading.gone = !ec;
      return reading;
    }
    reading.pcie = sysfs::read_pcie_link_state(known->second);
    auto failures = sysfs::read_probe_errors(probe_error_file_);
    if (auto failure = failures.find(device.pci_bus_id); failure != failures.end()) {
      reading.fault = failure->second.reason();
      return reading;
    }
    // Without its nodes a container granted the card could not use it.
    std::string node = xpu::names::device_node(device.index);
    if (!contains(device.device_nodes, node))
      reading.fault = "device node " + node + " does not exist";
    else if (!contains(device.device_nodes, xpu::names::kControlNode))
      reading.fault = "control node " + std::string(xpu::names::kControlNode) + " does not exist";
    return reading;
  }

 private:
  // Once per function and driver, so a steady state does not repeat itself every second.
  void log_ignored_functions(const std::map<std::string, std::string>& ignored) {
    for (const auto& [bus_id, driver] : ignored) {
      auto logged = ignored_functions_.find(bus_id);
      if (logged != ignored_functions_.end() && logged->second == driver) continue;
      spdlog::info("sysfs: not serving Kunlunxin function {}: bound to {}, not {}", bus_id,
                   driver.empty() ? "no driver" : driver, kDriverName);
    }
    ignored_functions_ = ignored;
  }

  void log_sriov_changes(const std::vector<sysfs::PciFunction>& functions) {
    std::map<std::string, std::pair<unsigned, unsigned>> now;
    for (const auto& function : functions) {
      if (!function.sriov_totalvfs || *function.sriov_totalvfs == 0) continue;
      std::pair<unsigned, unsigned> counts{function.sriov_numvfs.value_or(0),
                                           *function.sriov_totalvfs};
      auto logged = sriov_counts_.find(function.pci_bus_id);
      if (logged == sriov_counts_.end() || logged->second != counts)
        spdlog::info("sysfs: {} has {} of {} SR-IOV virtual functions enabled", function.pci_bus_id,
                     counts.first, counts.second);
      now.emplace(function.pci_bus_id, counts);
    }
    sriov_counts_ = std::move(now);
  }

  const fs::path root_;
  const fs::path devices_dir_;
  const fs::path probe_error_file_;
  // From the last successful discover(): where each served function lives in sysfs.
  std::map<std::string, fs::path> function_dirs_;
  std::map<std::string, std::string> ignored_functions_;  // bus id -> driver, as last logged
  std::map<std::string, std::pair<unsigned, unsigned>> sriov_counts_;  // numvfs, totalvfs
  topology::LinkAssigner links_;
};

}  // namespace

xpu::Result<std::unique_ptr<Backend>> make_sysfs_backend(
    const std::filesystem::path& root, std::shared_ptr<const topology::LinkTable> links) {
  auto devices_dir = root / "sys/bus/pci/devices";
  std::error_code ec;
  if (!fs::is_directory(devices_dir, ec))
    return xpu::Error{"sysfs backend: " + devices_dir.string() +
                      " is not a directory (is sysfs mounted, is [sysfs] root right?)"};
  return std::unique_ptr<Backend>(std::make_unique<SysfsBackend>(root, std::move(links)));
}

}  // namespace xpud
