// Moving a Kunlunxin PCI function (a card or an SR-IOV virtual function) between its own driver
// (kunlun) and vfio-pci, for a virtual machine, through the kernel's driver-binding files. The
// ABI, as xpud/README.md ("Cards for virtual machines") cites it:
//  - <function>/driver_override (Documentation/ABI/testing/sysfs-bus-pci; drivers/pci/pci-sysfs.c
//    driver_override_store): only the driver named there may bind the function; the kernel drops
//    one trailing newline, and an empty write clears it. It neither unbinds nor loads anything.
//  - /sys/bus/pci/drivers/<driver>/unbind (sysfs-bus-pci; drivers/base/bus.c unbind_store): the
//    function's address; ENODEV unless that driver holds it.
//  - /sys/bus/pci/drivers_probe (drivers/base/bus.c drivers_probe_store): the kernel looks for a
//    driver for the unbound function, honouring driver_override (drivers/pci/pci-driver.c
//    pci_match_device). It succeeds also when no driver took the function, so the function's
//    driver link is read afterwards.
//  - <function>/iommu_group, a link to /sys/kernel/iommu_groups/<N>, whose devices/ lists the
//    group's functions; a VM's user opens /dev/vfio/<N> (Documentation/driver-api/vfio.rst). The
//    group is usable only when each of its functions is bound to vfio-pci, to a driver that
//    leaves DMA to it (pci-stub, pcieport for bridges) or to none.
//
// Every write goes through KernelFiles (kernel_files.h). Each call either ends in the state asked
// for or rolls back to where it started; when even the roll-back fails, the error says exactly
// where the function was left. Runs on the driver thread (a kernel probe may take seconds).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "xpud/backends/driver_change.h"
#include "xpud/backends/vfio/kernel_files.h"

namespace xpud::vfio {

// The driver a Kunlunxin function returns to.
inline constexpr std::string_view kHostDriver = "kunlun";

// Binds the Kunlunxin function `bus_id` (any spelling normalize_bus_id takes) under `root`
// ("/", or a fake tree) to vfio-pci; nothing to do when it is there already. Refused before any
// write: InvalidArgument (no PCI address, not a Kunlunxin function), NoSuchDevice (no such
// function), NotSupported (no IOMMU group, vfio-pci not loaded, a physical function with its
// virtual functions on, an IOMMU group shared with a function bound to another driver).
// Failed: the kernel refused a write or vfio-pci did not take the function (rolled back).
std::optional<DriverChangeError> bind_to_vfio(const std::filesystem::path& root,
                                              const std::string& bus_id, KernelFiles& kernel);

// Gives the function back from vfio-pci to kunlun; nothing to do when kunlun holds it. A
// function bound to no driver (left so by someone else) is probed for kunlun too. Refused
// before any write: as bind_to_vfio, InvalidArgument for a function on another driver,
// NotSupported when kunlun is not loaded, InUse while /dev/vfio/<group> is open (a VM holds it).
std::optional<DriverChangeError> return_to_host_driver(const std::filesystem::path& root,
                                                       const std::string& bus_id,
                                                       KernelFiles& kernel);

}  // namespace xpud::vfio
