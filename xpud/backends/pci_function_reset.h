// The kernel's reset of a card's PCI function, through sysfs: the hardware backends' way to reset
// a card, since the vendor's public header gives none (docs/hardware.md, "Resetting a card").
//
// The ABI (Documentation/ABI/testing/sysfs-bus-pci, "reset" and "reset_method"): a function
// that can be reset alone has a `reset` file, made by drivers/pci/pci-sysfs.c only when the
// kernel found a reset method for it; writing "1" to it resets the function (reset_store ->
// pci_reset_function in drivers/pci/pci.c: the function's config space saved, the bound driver
// told through its reset_prepare/reset_done callbacks, the reset, the config space restored);
// any other value is EINVAL, and a function with no method left is ENOTTY. `reset_method` lists
// the methods the kernel will try, in order, separated by blanks ("flr bus"); an operator who
// wrote an empty line to it turned resets off.
#pragma once

#include <filesystem>
#include <optional>

#include "xpud/backends/card_reset.h"

namespace xpud {

class PciFunctionReset final : public CardResetControl {
 public:
  // `sysfs_root` as [sysfs] root: the function is <root>/sys/bus/pci/devices/<PciBusId>.
  explicit PciFunctionReset(std::filesystem::path sysfs_root) : root_(std::move(sysfs_root)) {}

  // NoSuchDevice when the function is gone, NotSupported without a `reset` file or with an
  // empty `reset_method`, Failed with the kernel's errno when the write is refused.
  std::optional<DriverChangeError> reset_card(const DeviceIdentity& device) override;

 private:
  std::filesystem::path root_;
};

}  // namespace xpud
