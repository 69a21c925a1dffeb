// Setting a physical function's SR-IOV virtual-function count through sysfs
// (<function>/sriov_totalvfs, <function>/sriov_numvfs): the sysfs backend's only way, and the
// xpuml backend's when its library lacks xpumlDeviceSetSriovVfNum.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "xpud/backends/virtual_functions.h"

namespace xpud::sysfs {

// `function_dir` is the function's directory under sys/bus/pci/devices; `subject` names the
// card in messages ("xpu0 (0000:3b:00.0)"). NotSupported without a usable sriov_totalvfs (or
// with 0), InvalidArgument above it. The kernel refuses to change a non-zero count to another
// non-zero one (EBUSY), so that takes two writes: 0, then `count`. Nothing is written when the
// count is already right.
std::optional<DriverChangeError> write_sriov_numvfs(const std::filesystem::path& function_dir,
                                                    const std::string& subject, unsigned count);

// The current count, when the function has a readable sriov_numvfs.
std::optional<unsigned> read_sriov_numvfs(const std::filesystem::path& function_dir);

}  // namespace xpud::sysfs
