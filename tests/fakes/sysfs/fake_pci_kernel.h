// The kernel's side of PCI driver binding over a FakeSysfsTree: what a write to driver_override,
// a driver's bind and unbind, and the bus's drivers_probe does, and what opening a VFIO group
// node answers, as the kernel does it (the sources, each at its rule in fake_pci_kernel.cpp).
// xpud's binder (xpud/backends/vfio/vfio_binding.h) writes through it in the tests.
//
// Test helper: setup failures throw std::runtime_error.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/fakes/sysfs/fake_sysfs_tree.h"
#include "xpud/backends/vfio/kernel_files.h"

namespace xpu::fakes {

class FakePciKernel final : public xpud::vfio::KernelFiles {
 public:
  explicit FakePciKernel(FakeSysfsTree& tree) : tree_(tree) {}

  // Loads `driver` (its /sys/bus/pci/drivers/<driver>/ with bind and unbind), which binds the
  // PCI device ids `device_ids` of any vendor by its id table; vfio-pci has none and binds only
  // through driver_override (drivers/vfio/pci/vfio_pci.c: its table is empty but for
  // driver_override matches, pci_match_device's pci_device_id_any).
  void load_driver(const std::string& driver, std::vector<std::uint16_t> device_ids = {});
  // Unloads it: its directory goes; a function it held keeps no driver.
  void unload_driver(const std::string& driver);
  // Makes `driver`'s probe fail (its probe returns an error; drivers_probe still succeeds).
  void fail_probe(const std::string& driver) { failing_probes_.insert(driver); }
  // A VFIO group node held open by a VM: opening /dev/vfio/<group> answers EBUSY.
  void hold_group(unsigned group) { held_groups_.insert(std::to_string(group)); }

  int write(const std::filesystem::path& file, std::string_view text) override;
  int probe_group(const std::filesystem::path& node) override;

  // Every write, in order: "<path under the root>=<text without its newline>".
  const std::vector<std::string>& writes() const { return writes_; }
  // What driver_override holds for the function ("" when unset).
  std::string driver_override(const std::string& bus_id) const;

 private:
  int write_override(const std::string& bus_id, std::string_view text);
  int unbind(const std::string& driver, std::string_view text);
  int bind(const std::string& driver, std::string_view text);
  int drivers_probe(std::string_view text);
  // Binds the unbound function to the first driver that matches it and probes it; "" for none.
  std::string attach(const std::string& bus_id, const std::string& only_driver = {});
  bool matches(const std::string& driver, const std::string& bus_id) const;
  std::string current_driver(const std::string& bus_id) const;
  bool exists(const std::string& bus_id) const;

  FakeSysfsTree& tree_;
  std::map<std::string, std::vector<std::uint16_t>> drivers_;  // loaded, with their id tables
  std::set<std::string> failing_probes_;
  std::set<std::string> held_groups_;
  std::map<std::string, std::string> overrides_;
  std::vector<std::string> writes_;
};

}  // namespace xpu::fakes
