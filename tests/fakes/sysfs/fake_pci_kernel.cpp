#include "tests/fakes/sysfs/fake_pci_kernel.h"

#include <cerrno>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace xpu::fakes {
namespace {

namespace fs = std::filesystem;

// lib/string.c sysfs_streq: equal, ignoring one trailing newline (bus_find_device_by_name's
// match, drivers/base/core.c device_match_name).
std::string device_name(std::string_view text) {
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  return std::string(text);
}

std::uint16_t read_hex(const fs::path& file) {
  std::ifstream in(file);
  std::string text;
  in >> text;
  return static_cast<std::uint16_t>(std::stoul(text, nullptr, 16));
}

}  // namespace

void FakePciKernel::load_driver(const std::string& driver, std::vector<std::uint16_t> device_ids) {
  const fs::path dir = tree_.root() / "sys/bus/pci/drivers" / driver;
  fs::create_directories(dir);
  std::ofstream(dir / "bind").flush();
  std::ofstream(dir / "unbind").flush();
  drivers_[driver] = std::move(device_ids);
}

void FakePciKernel::unload_driver(const std::string& driver) {
  drivers_.erase(driver);
  std::error_code ec;
  fs::remove_all(tree_.root() / "sys/bus/pci/drivers" / driver, ec);
}

std::string FakePciKernel::driver_override(const std::string& bus_id) const {
  auto it = overrides_.find(bus_id);
  return it == overrides_.end() ? std::string() : it->second;
}

bool FakePciKernel::exists(const std::string& bus_id) const {
  std::error_code ec;
  return !bus_id.empty() &&
         fs::exists(tree_.root() / "sys/bus/pci/devices" / bus_id / "vendor", ec);
}

std::string FakePciKernel::current_driver(const std::string& bus_id) const {
  std::error_code ec;
  auto target = fs::read_symlink(tree_.function_dir(bus_id) / "driver", ec);
  return ec ? std::string() : target.filename().string();
}

// drivers/pci/pci-driver.c pci_match_device: with driver_override set, only the driver of that
// name matches, by its id table or, failing that, any id; without one, the id table decides.
bool FakePciKernel::matches(const std::string& driver, const std::string& bus_id) const {
  auto loaded = drivers_.find(driver);
  if (loaded == drivers_.end()) return false;
  auto override = overrides_.find(bus_id);
  if (override != overrides_.end()) return override->second == driver;
  const std::uint16_t device = read_hex(tree_.function_dir(bus_id) / "device");
  for (auto id : loaded->second)
    if (id == device) return true;
  return false;
}

std::string FakePciKernel::attach(const std::string& bus_id, const std::string& only_driver) {
  for (const auto& [driver, ids] : drivers_) {
    if (!only_driver.empty() && driver != only_driver) continue;
    if (!matches(driver, bus_id)) continue;
    // vfio-pci's probe fails without an IOMMU group (drivers/vfio/group.c
    // vfio_device_set_group: no group, no device; only no-IOMMU mode differs).
    std::error_code ec;
    const bool has_group = fs::is_symlink(tree_.function_dir(bus_id) / "iommu_group", ec);
    if (failing_probes_.contains(driver) || (driver == "vfio-pci" && !has_group)) continue;
    tree_.bind_driver(bus_id, driver);
    if (driver == "vfio-pci") {
      // The group's character device, which udev names /dev/vfio/<group>.
      const std::string group =
          fs::read_symlink(tree_.function_dir(bus_id) / "iommu_group").filename().string();
      tree_.write_file(fs::path("dev/vfio") / group, "");
      tree_.write_file("dev/vfio/vfio", "");
    }
    return driver;
  }
  return {};
}

// drivers/pci/pci-sysfs.c driver_override_store (driver_set_override, drivers/base/driver.c):
// at most a page less one, one trailing newline dropped, an empty value clears it.
int FakePciKernel::write_override(const std::string& bus_id, std::string_view text) {
  if (!exists(bus_id)) return ENOENT;
  if (text.size() >= 4095) return EINVAL;
  std::string value = device_name(text);
  if (value.empty())
    overrides_.erase(bus_id);
  else
    overrides_[bus_id] = value;
  tree_.write_attribute(bus_id, "driver_override", (value.empty() ? "(null)" : value) + "\n");
  return 0;
}

// drivers/base/bus.c unbind_store: ENODEV unless the named device is bound to this driver.
int FakePciKernel::unbind(const std::string& driver, std::string_view text) {
  const std::string bus_id = device_name(text);
  if (!exists(bus_id) || current_driver(bus_id) != driver) return ENODEV;
  tree_.bind_driver(bus_id, "");
  return 0;
}

// drivers/base/bus.c bind_store: ENODEV unless the device exists and the driver matches it;
// EBUSY when it has a driver already (device_driver_attach); a failed probe is its error.
int FakePciKernel::bind(const std::string& driver, std::string_view text) {
  const std::string bus_id = device_name(text);
  if (!exists(bus_id) || !matches(driver, bus_id)) return ENODEV;
  if (!current_driver(bus_id).empty()) return EBUSY;
  return attach(bus_id, driver).empty() ? ENXIO : 0;
}

// drivers/base/bus.c drivers_probe_store: ENODEV for no such device; otherwise it succeeds,
// whether or not a driver took the device (bus_rescan_devices_helper ignores "no driver").
int FakePciKernel::drivers_probe(std::string_view text) {
  const std::string bus_id = device_name(text);
  if (!exists(bus_id)) return ENODEV;
  if (current_driver(bus_id).empty()) attach(bus_id);
  return 0;
}

int FakePciKernel::write(const fs::path& file, std::string_view text) {
  const fs::path relative = file.lexically_relative(tree_.root());
  writes_.push_back(relative.string() + "=" + device_name(text));
  const std::vector<std::string> parts(relative.begin(), relative.end());
  const auto is = [&](std::initializer_list<const char*> prefix) {
    if (parts.size() != prefix.size()) return false;
    std::size_t i = 0;
    for (const char* p : prefix) {
      if (*p != '*' && parts[i] != p) return false;
      ++i;
    }
    return true;
  };
  if (is({"sys", "bus", "pci", "devices", "*", "driver_override"}))
    return write_override(parts[4], text);
  if (is({"sys", "bus", "pci", "drivers_probe"})) return drivers_probe(text);
  if (is({"sys", "bus", "pci", "drivers", "*", "unbind"}) ||
      is({"sys", "bus", "pci", "drivers", "*", "bind"})) {
    if (!drivers_.contains(parts[4])) return ENOENT;  // no such file: the driver is not loaded
    return parts[5] == "unbind" ? unbind(parts[4], text) : bind(parts[4], text);
  }
  throw std::runtime_error("FakePciKernel: unexpected write to " + relative.string());
}

int FakePciKernel::probe_group(const fs::path& node) {
  std::error_code ec;
  if (!fs::exists(node, ec)) return ENOENT;
  return held_groups_.contains(node.filename().string()) ? EBUSY : 0;
}

}  // namespace xpu::fakes
