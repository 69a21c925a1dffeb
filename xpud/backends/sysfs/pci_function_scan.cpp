#include "xpud/backends/sysfs/pci_function_scan.h"

#include <dirent.h>
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>
#include <system_error>
#include <tuple>

#include "common/unique_fd.h"
#include "xpud/backends/pci_ids.h"
#include "xpud/backends/pcie_root.h"
#include "xpud/backends/sysfs_attribute.h"

namespace xpud::sysfs {
namespace {

namespace fs = std::filesystem;

void add_node_if_named(const fs::path& entry, std::vector<unsigned>& nodes) {
  if (auto number = parse_device_node_name(entry.filename().string())) nodes.push_back(*number);
}

// Everything past the vendor check: only Kunlunxin functions get here.
std::optional<PciFunction> read_kunlunxin_function(const fs::path& dir, std::string bus_id) {
  auto device = read_attribute(dir / "device", parse_pci_id);
  if (!device) return std::nullopt;
  // Without subsystem ids a 0x3684 function is still an XPU, just of an unknown board.
  auto subsystem_vendor = read_attribute(dir / "subsystem_vendor", parse_pci_id);
  auto subsystem_device = read_attribute(dir / "subsystem_device", parse_pci_id);
  auto model =
      pci::model_from_pci_ids(pci::kVendorKunlunxin, *device, subsystem_vendor.value_or(0xffff),
                              subsystem_device.value_or(0xffff));
  if (!model) return std::nullopt;

  PciFunction function;
  function.pci_bus_id = std::move(bus_id);
  function.dir = dir;
  function.model = std::move(*model);
  function.device_id = *device;
  function.subsystem_vendor = subsystem_vendor;
  function.subsystem_device = subsystem_device;
  function.numa_node = read_attribute(dir / "numa_node", parse_numa_node).value_or(-1);
  function.pcie_root = read_pcie_root(dir, function.pci_bus_id);
  function.driver = symlink_target_name(dir / "driver").value_or("");
  const auto physfn = symlink_target_name(dir / "physfn");
  function.has_physfn_link = physfn.has_value();
  if (function.has_physfn_link) {
    if (auto pf = pci::normalize_bus_id(*physfn)) function.physfn_bus_id = *pf;
    // Some kernels leave a VF's own numa_node at -1; it sits where its PF does.
    if (function.numa_node < 0)
      function.numa_node = read_attribute(dir / "physfn/numa_node", parse_numa_node).value_or(-1);
  } else {
    function.sriov_numvfs = read_attribute(dir / "sriov_numvfs", parse_vf_count);
    function.sriov_totalvfs = read_attribute(dir / "sriov_totalvfs", parse_vf_count);
  }
  function.published_nodes = published_device_nodes(dir);
  return function;
}

}  // namespace

// Class devices sit either directly under the parent device or one level down in a directory
// named after their class. Links (driver, subsystem, physfn, virtfnN...) lead elsewhere in the
// tree and are not followed.
std::vector<unsigned> published_device_nodes(const fs::path& function_dir) {
  std::vector<unsigned> nodes;
  std::error_code ec;
  fs::directory_iterator it(function_dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    add_node_if_named(it->path(), nodes);
    std::error_code type_ec;
    if (it->is_symlink(type_ec) || !it->is_directory(type_ec)) continue;
    std::error_code sub_ec;
    fs::directory_iterator sub(it->path(), sub_ec);
    for (; !sub_ec && sub != end; sub.increment(sub_ec)) add_node_if_named(sub->path(), nodes);
  }
  // A function without a directory (the xpuml backend asks about cards sysfs may not show) has
  // simply no nodes.
  if (ec && ec != std::errc::no_such_file_or_directory)
    log_ignored_file(function_dir, "cannot list: " + ec.message());
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

std::optional<unsigned> parse_device_node_name(std::string_view name) {
  if (!name.starts_with("xpu")) return std::nullopt;
  name.remove_prefix(3);
  if (name.empty() || name.size() > 4 || (name.size() > 1 && name.front() == '0'))
    return std::nullopt;
  unsigned value = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), value, 10);
  if (ec != std::errc{} || end != name.data() + name.size() || value > kMaxDeviceNodeNumber)
    return std::nullopt;
  return value;
}

xpu::Result<std::vector<PciFunction>> scan_kunlunxin_functions(const fs::path& devices_dir) {
  auto cannot_list = [&](int error) {
    return xpu::Error{"cannot list " + devices_dir.string() + ": " + std::strerror(error)};
  };
  xpu::UniqueFd dir_fd(::open(devices_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd.valid()) return cannot_list(errno);
  // fdopendir takes the descriptor it is given; keep our own for openat.
  xpu::UniqueFd listing_fd(::fcntl(dir_fd.get(), F_DUPFD_CLOEXEC, 0));
  if (!listing_fd.valid()) return cannot_list(errno);
  std::unique_ptr<DIR, int (*)(DIR*)> listing(::fdopendir(listing_fd.get()), ::closedir);
  if (!listing) return cannot_list(errno);
  listing_fd.release();

  std::vector<PciFunction> functions;
  while (true) {
    errno = 0;
    const dirent* entry = ::readdir(listing.get());
    if (entry == nullptr) {
      if (errno != 0) return cannot_list(errno);
      break;
    }
    std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    // Most functions are not ours: one read of one small file each, relative to the open
    // directory, before anything else is built.
    auto vendor =
        read_attribute_at(dir_fd.get(), devices_dir, fs::path(name) / "vendor", parse_pci_id);
    if (vendor != pci::kVendorKunlunxin) continue;

    fs::path dir = devices_dir / name;
    auto bus_id = pci::normalize_bus_id(std::string(name));
    if (!bus_id) {
      log_ignored_file(dir, "entry name is not a PCI address");
      continue;
    }
    if (auto function = read_kunlunxin_function(dir, std::move(*bus_id)))
      functions.push_back(std::move(*function));
  }

  std::sort(functions.begin(), functions.end(), [](const PciFunction& a, const PciFunction& b) {
    return std::tie(a.pci_bus_id, a.dir) < std::tie(b.pci_bus_id, b.dir);
  });
  // Two entries spelling one address differently (only a broken tree has them): keep the first.
  auto same_address = [](const PciFunction& a, const PciFunction& b) {
    return a.pci_bus_id == b.pci_bus_id;
  };
  for (std::size_t i = 1; i < functions.size(); ++i)
    if (same_address(functions[i - 1], functions[i]))
      log_ignored_file(functions[i].dir, "another entry has the same bus id");
  functions.erase(std::unique(functions.begin(), functions.end(), same_address), functions.end());
  return functions;
}

}  // namespace xpud::sysfs
