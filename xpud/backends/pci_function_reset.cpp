#include "xpud/backends/pci_function_reset.h"

#include <sys/stat.h>

#include <cerrno>
#include <string>

#include <spdlog/spdlog.h>

#include "common/names.h"
#include "xpud/backends/sysfs_attribute.h"
#include "xpud/backends/sysfs_write.h"

namespace xpud {
namespace {

using Kind = DriverChangeError::Kind;

// What the kernel's errno on a `reset` write means (drivers/pci/pci-sysfs.c reset_store,
// drivers/pci/pci.c pci_reset_function and the methods it tries).
std::string explain(int error) {
  switch (error) {
    case ENOTTY:
      return " (the kernel has no reset method left for the function, or the one it tried "
             "could not be used: e.g. a bus reset with other functions on the bus)";
    case EINVAL:
      return " (the kernel did not take the value)";
    case EPERM:
    case EACCES:
      return " (xpud may not write it: is it running as root?)";
    case ENOENT:
    case ENODEV:
      return " (the card is gone)";
    default:
      return "";
  }
}

}  // namespace

std::optional<DriverChangeError> PciFunctionReset::reset_card(const DeviceIdentity& device) {
  const std::string subject =
      xpu::names::device_name(device.index) + " (" + device.pci_bus_id + ")";
  // The bus id comes from discovery; still, never let it walk out of the devices directory.
  if (device.pci_bus_id.empty() || device.pci_bus_id.find('/') != std::string::npos ||
      device.pci_bus_id.front() == '.')
    return DriverChangeError{Kind::NotSupported, subject + " has no PCI function to reset"};
  const auto function_dir = root_ / "sys/bus/pci/devices" / device.pci_bus_id;
  std::error_code ec;
  if (!std::filesystem::is_directory(function_dir, ec))
    return DriverChangeError{Kind::NoSuchDevice, subject + ": " + function_dir.string() +
                                                     " is gone (the card was removed?)"};
  // The kernel makes `reset` only for a function it can reset (pci_dev_reset_attr_is_visible).
  const auto reset = function_dir / "reset";
  if (!std::filesystem::exists(std::filesystem::symlink_status(reset, ec)))
    return DriverChangeError{
        Kind::NotSupported,
        subject + ": the kernel has no reset for this function (no " + reset.string() + ")"};
  // reset_method: absent before Linux 5.15; present and blank when an operator turned resets off.
  std::string methods = "the kernel's default";
  auto listed = sysfs::read_text_file(function_dir / "reset_method");
  if (listed.ok() && *listed) {
    methods = std::string(sysfs::trim_trailing_space(**listed));
    if (methods.empty())
      return DriverChangeError{Kind::NotSupported, subject + ": resets are turned off (" +
                                                       (function_dir / "reset_method").string() +
                                                       " is empty)"};
  }
  spdlog::info("{}: resetting the PCI function ({}: {})", subject, reset.string(), methods);
  if (auto failed = sysfs::write_attribute(reset, "1"))
    return DriverChangeError{Kind::Failed,
                             subject + ": " + failed->message + explain(failed->error)};
  return std::nullopt;
}

}  // namespace xpud
