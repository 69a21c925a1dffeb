#include "xpud/backends/sriov_numvfs.h"

#include <cerrno>

#include <spdlog/spdlog.h>

#include "xpud/backends/sysfs_attribute.h"
#include "xpud/backends/sysfs_write.h"

namespace xpud::sysfs {
namespace {

using Kind = DriverChangeError::Kind;

// What the kernel's errno on a sriov_numvfs write means to the operator.
std::string explain(int error) {
  switch (error) {
    case EBUSY:
      return " (virtual functions are in use, e.g. assigned to a VM or held by a process)";
    case EPERM:
    case EACCES:
      return " (xpud may not write it: is it running as root?)";
    case ENOMEM:
    case ENOSPC:
      return " (not enough PCI bus numbers or memory for that many functions)";
    case ENOENT:
    case ENODEV:
      return " (the card is gone)";
    default:
      return "";
  }
}

// One write of `value`, its failure told with what the errno means here.
std::optional<DriverChangeError> write_value(const std::filesystem::path& file,
                                             const std::string& subject, unsigned value) {
  auto failed = write_attribute(file, std::to_string(value) + "\n");
  if (!failed) return std::nullopt;
  return DriverChangeError{Kind::Failed, subject + ": " + failed->message + explain(failed->error)};
}

}  // namespace

std::optional<unsigned> read_sriov_numvfs(const std::filesystem::path& function_dir) {
  return read_attribute(function_dir / "sriov_numvfs", parse_vf_count);
}

std::optional<DriverChangeError> write_sriov_numvfs(const std::filesystem::path& function_dir,
                                                    const std::string& subject, unsigned count) {
  auto total = parse_attribute(function_dir / "sriov_totalvfs", parse_vf_count);
  if (!total.ok())
    return DriverChangeError{Kind::NotSupported,
                             subject + ": SR-IOV capability unreadable: " + total.error()};
  if (!*total || **total == 0)
    return DriverChangeError{Kind::NotSupported, subject +
                                                     " has no SR-IOV capability (no virtual "
                                                     "functions in its sriov_totalvfs)"};
  if (count > **total)
    return DriverChangeError{Kind::InvalidArgument,
                             subject + " supports at most " + std::to_string(**total) +
                                 " virtual functions (sriov_totalvfs), not " +
                                 std::to_string(count)};
  const auto numvfs = function_dir / "sriov_numvfs";
  auto current = parse_attribute(numvfs, parse_vf_count);
  if (!current.ok()) return DriverChangeError{Kind::Failed, subject + ": " + current.error()};
  if (!*current)
    return DriverChangeError{Kind::NotSupported,
                             subject + " has sriov_totalvfs but no sriov_numvfs"};
  if (**current == count) {
    spdlog::info("{} already has {} virtual functions", subject, count);
    return std::nullopt;
  }
  if (**current != 0 && count != 0)
    if (auto failed = write_value(numvfs, subject, 0)) return failed;
  if (auto failed = write_value(numvfs, subject, count)) return failed;
  spdlog::info("{}: virtual functions {} -> {} (sysfs)", subject, **current, count);
  return std::nullopt;
}

}  // namespace xpud::sysfs
