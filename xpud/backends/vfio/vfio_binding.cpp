#include "xpud/backends/vfio/vfio_binding.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <variant>
#include <vector>

#include "xpud/backends/pci_ids.h"
#include "xpud/backends/sysfs_attribute.h"
#include "xpud/backends/vfio/vfio_functions.h"

namespace xpud::vfio {
namespace {

namespace fs = std::filesystem;
using Kind = DriverChangeError::Kind;

// Drivers that leave a group's DMA to its VFIO user (driver_managed_dma in the kernel): a group
// member bound to one of them does not stop a VM from taking the group.
constexpr std::array kGroupFriendlyDrivers = {
    std::string_view(""), kVfioDriver, std::string_view("pci-stub"), std::string_view("pcieport")};

std::string errno_text(int error) {
  return std::strerror(error);
}

// One PCI function's place in sysfs and the files that move it.
struct Function {
  fs::path root;
  std::string bus_id;
  fs::path dir;  // root/sys/bus/pci/devices/<bus_id>

  fs::path driver_file(std::string_view driver, std::string_view file) const {
    return root / "sys/bus/pci/drivers" / driver / file;
  }
  std::string driver() const { return sysfs::symlink_target_name(dir / "driver").value_or(""); }
  std::string driver_text() const {
    const std::string name = driver();
    return name.empty() ? "no driver" : name;
  }
};

// The function behind `bus_id`, or why it is none of ours.
std::variant<Function, DriverChangeError> find_function(const fs::path& root,
                                                        const std::string& bus_id) {
  auto normalized = pci::normalize_bus_id(bus_id);
  if (!normalized)
    return DriverChangeError{Kind::InvalidArgument,
                             "'" + bus_id + "' is not a PCI address (dddd:bb:dd.f)"};
  Function function{root, *normalized, root / "sys/bus/pci/devices" / *normalized};
  std::error_code ec;
  if (!fs::exists(function.dir, ec))
    return DriverChangeError{Kind::NoSuchDevice, "no PCI function " + function.bus_id + " (no " +
                                                     function.dir.string() + ")"};
  auto vendor = sysfs::read_attribute(function.dir / "vendor", sysfs::parse_pci_id);
  if (vendor != pci::kVendorKunlunxin)
    return DriverChangeError{Kind::InvalidArgument,
                             function.bus_id + " is not a Kunlunxin function (vendor " +
                                 (vendor ? std::to_string(*vendor) : "unreadable") +
                                 "); xpud binds only its own cards"};
  return function;
}

// Why the function's IOMMU group cannot go to a VM with it, or nullopt: each other member must
// be bound to a driver that leaves DMA to VFIO, or to none.
std::optional<DriverChangeError> check_group(const Function& function, const std::string& group) {
  const fs::path members = function.root / "sys/kernel/iommu_groups" / group / "devices";
  std::error_code ec;
  fs::directory_iterator it(members, ec), end;
  if (ec)
    return DriverChangeError{Kind::NotSupported, function.bus_id +
                                                     ": cannot list its IOMMU group " +
                                                     members.string() + ": " + ec.message()};
  std::vector<std::string> blocking;
  for (; it != end; it.increment(ec)) {
    const std::string member = it->path().filename().string();
    if (member == function.bus_id) continue;
    const std::string driver =
        sysfs::symlink_target_name(function.root / "sys/bus/pci/devices" / member / "driver")
            .value_or("");
    if (std::find(kGroupFriendlyDrivers.begin(), kGroupFriendlyDrivers.end(), driver) !=
        kGroupFriendlyDrivers.end())
      continue;
    blocking.push_back(member);
    blocking.back().append(" (bound to ").append(driver).append(")");
  }
  if (ec)
    return DriverChangeError{Kind::NotSupported, function.bus_id +
                                                     ": cannot list its IOMMU group " +
                                                     members.string() + ": " + ec.message()};
  if (blocking.empty()) return std::nullopt;
  std::sort(blocking.begin(), blocking.end());
  std::string list;
  for (const auto& member : blocking) list += (list.empty() ? "" : ", ") + member;
  return DriverChangeError{
      Kind::NotSupported,
      function.bus_id + " shares IOMMU group " + group + " with " + list +
          ": a VM takes a whole group, so every other function in it must be on vfio-pci, "
          "pci-stub or no driver first (xpud moves only its own function); or put the card in a "
          "slot with a group of its own (ACS)"};
}

// Probes the function for a driver and says which one took it ("" for none).
std::string probe(const Function& function, KernelFiles& kernel, int& error) {
  error = kernel.write(function.root / "sys/bus/pci/drivers_probe", function.bus_id + "\n");
  return function.driver();
}

DriverChangeError failed(std::string message) {
  return {Kind::Failed, std::move(message)};
}

// After a move that did not end on `wanted`: the override back to `override_text`, a probe, and
// a sentence saying where the function is now.
std::string roll_back(const Function& function, KernelFiles& kernel, std::string_view override_text,
                      std::string_view previous_driver) {
  const int cleared = kernel.write(function.dir / "driver_override", override_text);
  if (cleared != 0)
    return "; rolling back, driver_override could not be reset (" + errno_text(cleared) +
           "): it is left on " + function.driver_text();
  int probe_error = 0;
  const std::string now = probe(function, kernel, probe_error);
  if (now == previous_driver) return "; rolled back: it is on " + function.driver_text() + " again";
  return "; rolling back, " + std::string(previous_driver) + " did not take it again" +
         (probe_error != 0 ? " (drivers_probe: " + errno_text(probe_error) + ")" : "") +
         ": it is left on " + function.driver_text() + " (echo " + function.bus_id +
         " > /sys/bus/pci/drivers_probe retries)";
}

}  // namespace

std::optional<DriverChangeError> bind_to_vfio(const fs::path& root, const std::string& bus_id,
                                              KernelFiles& kernel) {
  auto found = find_function(root, bus_id);
  if (auto* refusal = std::get_if<DriverChangeError>(&found)) return *refusal;
  const Function& function = std::get<Function>(found);
  const std::string driver = function.driver();
  if (driver == kVfioDriver) {
    spdlog::info("vfio: {} is on {} already", function.bus_id, kVfioDriver);
    return std::nullopt;
  }
  const std::string group = read_iommu_group(function.dir);
  if (group.empty())
    return DriverChangeError{Kind::NotSupported,
                             function.bus_id +
                                 " has no IOMMU group (no iommu_group link): turn the IOMMU on "
                                 "(intel_iommu=on or amd_iommu=on on the kernel command line)"};
  std::error_code ec;
  if (!fs::is_directory(root / "sys/bus/pci/drivers" / kVfioDriver, ec))
    return DriverChangeError{Kind::NotSupported,
                             "vfio-pci is not loaded (no /sys/bus/pci/drivers/vfio-pci): "
                             "modprobe vfio-pci, or list it in /etc/modules-load.d"};
  if (auto numvfs = sysfs::read_attribute(function.dir / "sriov_numvfs", sysfs::parse_vf_count);
      numvfs && *numvfs > 0)
    return DriverChangeError{Kind::NotSupported,
                             function.bus_id + " has " + std::to_string(*numvfs) +
                                 " SR-IOV virtual functions on: bind those, or set 0 first "
                                 "(xpuctl configure-vfs)"};
  if (auto refusal = check_group(function, group)) return refusal;

  // Override first: from the unbind on, no driver but vfio-pci may take the function.
  if (int error = kernel.write(function.dir / "driver_override", std::string(kVfioDriver) + "\n"))
    return failed(function.bus_id + ": cannot write driver_override: " + errno_text(error) +
                  "; nothing changed");
  if (!driver.empty()) {
    if (int error = kernel.write(function.driver_file(driver, "unbind"), function.bus_id + "\n")) {
      std::string message = function.bus_id + ": " + driver +
                            " would not let it go (unbind: " + errno_text(error) + ")";
      return failed(message + roll_back(function, kernel, "\n", driver));
    }
  }
  int probe_error = 0;
  const std::string now = probe(function, kernel, probe_error);
  if (now == kVfioDriver) {
    spdlog::info("vfio: {} moved from {} to {} (IOMMU group {})", function.bus_id,
                 driver.empty() ? "no driver" : driver, kVfioDriver, group);
    return std::nullopt;
  }
  std::string message = function.bus_id + ": vfio-pci did not take it" +
                        (probe_error != 0 ? " (drivers_probe: " + errno_text(probe_error) + ")"
                                          : " (the kernel log says why)");
  return failed(message + roll_back(function, kernel, "\n", driver.empty() ? "" : driver));
}

std::optional<DriverChangeError> return_to_host_driver(const fs::path& root,
                                                       const std::string& bus_id,
                                                       KernelFiles& kernel) {
  auto found = find_function(root, bus_id);
  if (auto* refusal = std::get_if<DriverChangeError>(&found)) return *refusal;
  const Function& function = std::get<Function>(found);
  const std::string driver = function.driver();
  if (driver == kHostDriver) {
    spdlog::info("vfio: {} is on {} already", function.bus_id, kHostDriver);
    return std::nullopt;
  }
  if (!driver.empty() && driver != kVfioDriver)
    return DriverChangeError{Kind::InvalidArgument, function.bus_id + " is bound to " + driver +
                                                        ", not vfio-pci; xpud leaves it there"};
  std::error_code ec;
  if (!fs::is_directory(root / "sys/bus/pci/drivers" / kHostDriver, ec))
    return DriverChangeError{Kind::NotSupported,
                             "the kunlun driver is not loaded (no /sys/bus/pci/drivers/kunlun): " +
                                 function.bus_id + " stays on " + function.driver_text()};
  if (driver == kVfioDriver) {
    if (const std::string group = read_iommu_group(function.dir); !group.empty()) {
      const fs::path node = root / "dev/vfio" / group;
      const int error = kernel.probe_group(node);
      if (error == EBUSY)
        return DriverChangeError{Kind::InUse, function.bus_id + ": its IOMMU group " + group +
                                                  " is open (/dev/vfio/" + group +
                                                  "): a VM holds it; stop the VM first"};
      if (error != 0 && error != ENOENT)
        return failed(function.bus_id + ": cannot tell whether a VM holds it: opening " +
                      node.string() + ": " + errno_text(error) + "; nothing changed");
    }
    if (int error =
            kernel.write(function.driver_file(kVfioDriver, "unbind"), function.bus_id + "\n"))
      return failed(function.bus_id + ": vfio-pci would not let it go (unbind: " +
                    errno_text(error) + "); nothing changed");
  }
  // From here a failure puts it back on vfio-pci, where it was.
  const std::string& previous = driver;
  const std::string back_override = previous.empty() ? "\n" : std::string(kVfioDriver) + "\n";
  if (int error = kernel.write(function.dir / "driver_override", "\n"))
    return failed(function.bus_id + ": cannot clear driver_override: " + errno_text(error) +
                  roll_back(function, kernel, back_override, previous));
  int probe_error = 0;
  const std::string now = probe(function, kernel, probe_error);
  if (now == kHostDriver) {
    spdlog::info("vfio: {} moved from {} to {}", function.bus_id,
                 previous.empty() ? "no driver" : previous, kHostDriver);
    return std::nullopt;
  }
  std::string message = function.bus_id + ": kunlun did not take it" +
                        (probe_error != 0 ? " (drivers_probe: " + errno_text(probe_error) + ")"
                                          : " (the kernel log says why)");
  return failed(message + roll_back(function, kernel, back_override, previous));
}

}  // namespace xpud::vfio
