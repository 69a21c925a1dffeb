// The kernel files that move a PCI function between drivers, as one seam: production writes
// them (KernelFiles::real()); the tests put a stand-in of the kernel's side behind it
// (tests/fakes/sysfs/fake_pci_kernel.h), because a plain file cannot answer a write with ENODEV
// or bind a driver as the kernel does.
//
// Threads: whoever calls; the real one keeps no state.
#pragma once

#include <filesystem>
#include <memory>
#include <string_view>

namespace xpud::vfio {

class KernelFiles {
 public:
  virtual ~KernelFiles() = default;
  KernelFiles() = default;
  KernelFiles(const KernelFiles&) = delete;
  KernelFiles& operator=(const KernelFiles&) = delete;

  // One write(2) of `text` to an existing sysfs attribute (never created, never a FIFO or a
  // symlink followed at the end): 0, or the errno the kernel answered (a short write is EIO).
  virtual int write(const std::filesystem::path& file, std::string_view text) = 0;
  // Opens the VFIO group node `node` (/dev/vfio/<group>) read-write and closes it again: 0 when
  // nobody holds the group, EBUSY while a user (a VM's QEMU) has it open, as
  // drivers/vfio/group.c's open answers (one opener at a time); ENOENT without the node.
  virtual int probe_group(const std::filesystem::path& node) = 0;

  // The kernel's own files.
  static std::unique_ptr<KernelFiles> real();
};

}  // namespace xpud::vfio
