#include "xpud/backends/pcie_root.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <vector>

#include "common/errno_text.h"
#include "common/pci_address.h"
#include "xpud/backends/sysfs_attribute.h"

namespace xpud::sysfs {

std::optional<std::string> pcie_root_from_link(std::string_view bus_id, std::string_view target) {
  if (!xpu::pci_address::is_extended_bdf(bus_id) || target.empty() || target.front() == '/')
    return std::nullopt;
  // Lexically, as filepath.Clean(filepath.Join("bus/pci/devices", target)): the link's own
  // directory, relative to the sysfs root, then the target's components. A ".." above the root
  // leaves sysfs.
  std::vector<std::string_view> path = {"bus", "pci", "devices"};
  while (!target.empty()) {
    const std::size_t slash = target.find('/');
    const std::string_view part = target.substr(0, slash);
    target.remove_prefix(slash == std::string_view::npos ? target.size() : slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (path.empty()) return std::nullopt;
      path.pop_back();
    } else {
      path.push_back(part);
    }
  }
  if (path.size() < 3 || path.front() != "devices" || path.back() != bus_id ||
      !xpu::pci_address::is_pcie_root(path[1]))
    return std::nullopt;
  return std::string(path[1]);
}

std::string read_pcie_root(const std::filesystem::path& entry, std::string_view bus_id) {
  if (!xpu::pci_address::is_extended_bdf(bus_id)) {
    log_ignored_file(entry, "not named by an extended BDF, so no PCIe root");
    return {};
  }
  char target[PATH_MAX];
  const ssize_t n = ::readlink(entry.c_str(), target, sizeof target);
  if (n < 0) {
    const int error = errno;
    if (error == ENOENT || error == ENOTDIR) return {};  // no entry: nothing to tell
    log_ignored_file(entry, error == EINVAL ? "not a link, so no PCIe root"
                                            : "cannot read the link: " + xpu::errno_text(error));
    return {};
  }
  if (static_cast<std::size_t>(n) >= sizeof target) {
    log_ignored_file(entry, "link longer than PATH_MAX");
    return {};
  }
  const std::string_view text(target, static_cast<std::size_t>(n));
  if (auto root = pcie_root_from_link(bus_id, text)) return *root;
  std::string shown(text.substr(0, 200));
  for (char& c : shown)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  log_ignored_file(entry, "link to \"" + shown + "\" is not devices/pciDDDD:BB/.../" +
                              std::string(bus_id) + ": no PCIe root");
  return {};
}

}  // namespace xpud::sysfs
