#include "tests/fakes/sysfs/fake_sysfs_tree.h"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace xpu::fakes {
namespace {

namespace fs = std::filesystem;

std::string hex_id(std::uint16_t value) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%04x\n", value);
  return text;
}

// "0000:3b:00.0" -> "pci0000:3b", the host bridge directory real sysfs puts it under.
std::string bridge_dir_name(std::string_view bus_id) {
  auto second_colon = bus_id.find(':', bus_id.find(':') + 1);
  return "pci" + std::string(bus_id.substr(0, second_colon));
}

// $TMPDIR when set, else /dev/shm: tmpfs, like the real sysfs, and far quicker than a disk
// for trees of hundreds of functions.
std::string temp_parent() {
  const char* tmp = std::getenv("TMPDIR");
  if (tmp != nullptr && *tmp != '\0') return tmp;
  if (::access("/dev/shm", W_OK | X_OK) == 0) return "/dev/shm";
  return "/tmp";
}

fs::path make_temp_root() {
  std::string pattern = temp_parent() + "/fake-sysfs-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr)
    throw std::runtime_error("fake sysfs: mkdtemp " + pattern + ": " + std::strerror(errno));
  return fs::path(buffer.data());
}

// The error names aer.c prints for each severity (aer_correctable_error_string,
// aer_uncorrectable_error_string; the named bits only).
constexpr const char* kCorrectableErrors[] = {"RxErr",   "BadTLP",      "BadDLLP",    "Rollover",
                                              "Timeout", "NonFatalErr", "CorrIntErr", "HeaderOF"};
constexpr const char* kUncorrectableErrors[] = {"Undefined",     "DLP",
                                                "SDES",          "TLP",
                                                "FCP",           "CmpltTO",
                                                "CmpltAbrt",     "UnxCmplt",
                                                "RxOF",          "MalfTLP",
                                                "ECRC",          "UnsupReq",
                                                "ACSViol",       "UncorrIntErr",
                                                "BlockedTLP",    "AtomicOpBlocked",
                                                "TLPBlockedErr", "PoisonTLPBlocked"};

template <std::size_t N>
std::string aer_file(const char* const (&names)[N], const char* total, std::uint64_t count) {
  std::string text;
  for (std::size_t i = 0; i < N; ++i)
    text += std::string(names[i]) + " " + std::to_string(i == 0 ? count : 0) + "\n";
  return text + "TOTAL_" + total + " " + std::to_string(count) + "\n";
}

}  // namespace

FakePciFunction kunlunxin_r_series(std::string bus_id, std::uint16_t subsystem_device,
                                   int numa_node) {
  FakePciFunction function;
  function.bus_id = std::move(bus_id);
  function.subsystem_device = subsystem_device;
  function.numa_node = numa_node;
  return function;
}

FakePciFunction kunlunxin_k200(std::string bus_id, int numa_node) {
  FakePciFunction function = kunlunxin_r_series(std::move(bus_id), 0, numa_node);
  function.subsystem_vendor = 0;
  return function;
}

FakePciFunction kunlunxin_p800(std::string bus_id, int numa_node) {
  FakePciFunction function = kunlunxin_r_series(std::move(bus_id), 0, numa_node);
  function.device = 0x3688;
  function.subsystem_vendor = 0x1d22;
  return function;
}

FakePciFunction kunlunxin_vf(std::string bus_id, std::string pf_bus_id, int numa_node) {
  FakePciFunction function = kunlunxin_r_series(std::move(bus_id), 1, numa_node);
  function.device = 0x3685;
  function.physical_function = std::move(pf_bus_id);
  function.pcie_link = FakePcieLink{"Unknown", 0, "Unknown", 0};
  return function;
}

FakePciFunction other_pci_function(std::string bus_id, std::uint16_t vendor, std::uint16_t device) {
  FakePciFunction function;
  function.bus_id = std::move(bus_id);
  function.vendor = vendor;
  function.device = device;
  function.subsystem_vendor = vendor;
  function.subsystem_device = 0;
  function.driver.clear();
  function.aer.reset();
  return function;
}

FakeSysfsTree::FakeSysfsTree(EntryStyle style) : root_(make_temp_root()), style_(style) {
  fs::create_directories(root_ / "sys/bus/pci/devices");
  fs::create_directories(root_ / "sys/bus/pci/drivers");
  fs::create_directories(root_ / "sys/devices");
  fs::create_directories(root_ / "dev");
  fs::create_directories(root_ / "proc");
}

FakeSysfsTree::~FakeSysfsTree() {
  std::error_code ec;
  fs::remove_all(root_, ec);
}

fs::path FakeSysfsTree::entry_path(std::string_view bus_id) const {
  return root_ / "sys/bus/pci/devices" / bus_id;
}

fs::path FakeSysfsTree::function_dir(std::string_view bus_id) const {
  if (style_ == EntryStyle::Directory) return entry_path(bus_id);
  return root_ / "sys/devices" / bridge_dir_name(bus_id) / bus_id;
}

// Relative targets, as the kernel writes them, so the links resolve inside the fake root.
void FakeSysfsTree::link(const fs::path& link, const fs::path& target) {
  std::error_code ec;
  fs::remove(link, ec);
  fs::create_symlink(target.lexically_relative(link.parent_path()), link);
}

fs::path FakeSysfsTree::add_pci_function(const FakePciFunction& function) {
  fs::path dir = function_dir(function.bus_id);
  fs::create_directories(dir);
  if (style_ == EntryStyle::Symlink) link(entry_path(function.bus_id), dir);
  write_attribute(function.bus_id, "vendor", hex_id(function.vendor));
  write_attribute(function.bus_id, "device", hex_id(function.device));
  write_attribute(function.bus_id, "subsystem_vendor", hex_id(function.subsystem_vendor));
  write_attribute(function.bus_id, "subsystem_device", hex_id(function.subsystem_device));
  write_attribute(function.bus_id, "numa_node", std::to_string(function.numa_node) + "\n");
  // Every PCI device has it (drivers/pci/pci-sysfs.c); unset, it reads "(null)" (its show
  // prints the NULL pointer with "%s\n").
  write_attribute(function.bus_id, "driver_override", "(null)\n");
  if (function.sriov_totalvfs) {
    write_attribute(function.bus_id, "sriov_totalvfs",
                    std::to_string(*function.sriov_totalvfs) + "\n");
    write_attribute(function.bus_id, "sriov_numvfs", std::to_string(function.sriov_numvfs) + "\n");
  }
  if (!function.physical_function.empty())
    link(dir / "physfn", function_dir(function.physical_function));
  if (function.pcie_link) write_pcie_link(function.bus_id, *function.pcie_link);
  if (function.aer) write_aer_counts(function.bus_id, *function.aer);
  if (function.reset_methods) {
    write_attribute(function.bus_id, "reset_method",
                    *function.reset_methods + (function.reset_methods->empty() ? "" : "\n"));
    write_attribute(function.bus_id, "reset", "");
  }
  bind_driver(function.bus_id, function.driver);
  return dir;
}

void FakeSysfsTree::write_pcie_link(std::string_view bus_id, const FakePcieLink& link) {
  write_attribute(bus_id, "current_link_speed", link.current_speed + "\n");
  write_attribute(bus_id, "current_link_width", std::to_string(link.current_width) + "\n");
  write_attribute(bus_id, "max_link_speed", link.max_speed + "\n");
  write_attribute(bus_id, "max_link_width", std::to_string(link.max_width) + "\n");
}

void FakeSysfsTree::write_aer_counts(std::string_view bus_id, const FakeAerCounts& counts) {
  write_attribute(bus_id, "aer_dev_correctable",
                  aer_file(kCorrectableErrors, "ERR_COR", counts.correctable));
  write_attribute(bus_id, "aer_dev_nonfatal",
                  aer_file(kUncorrectableErrors, "ERR_NONFATAL", counts.nonfatal));
  write_attribute(bus_id, "aer_dev_fatal",
                  aer_file(kUncorrectableErrors, "ERR_FATAL", counts.fatal));
}

void FakeSysfsTree::remove_pci_function(std::string_view bus_id) {
  if (style_ == EntryStyle::Symlink) fs::remove(entry_path(bus_id));
  fs::remove_all(function_dir(bus_id));
}

void FakeSysfsTree::write_attribute(std::string_view bus_id, std::string_view name,
                                    std::string_view contents) {
  write_file(function_dir(bus_id).lexically_relative(root_) / name, contents);
}

void FakeSysfsTree::bind_driver(std::string_view bus_id, std::string_view driver) {
  fs::path link_path = function_dir(bus_id) / "driver";
  std::error_code ec;
  fs::remove(link_path, ec);
  if (driver.empty()) return;
  fs::path driver_dir = root_ / "sys/bus/pci/drivers" / driver;
  fs::create_directories(driver_dir);
  link(link_path, driver_dir);
}

void FakeSysfsTree::add_to_iommu_group(std::string_view bus_id, unsigned group) {
  const fs::path group_dir = root_ / "sys/kernel/iommu_groups" / std::to_string(group);
  fs::create_directories(group_dir / "devices");
  link(group_dir / "devices" / bus_id, function_dir(bus_id));
  link(function_dir(bus_id) / "iommu_group", group_dir);
}

void FakeSysfsTree::publish_class_device(std::string_view bus_id, unsigned index,
                                         std::string_view class_name) {
  // Major 508 is as good as any: nothing reads the number back.
  write_file(function_dir(bus_id).lexically_relative(root_) / class_name /
                 ("xpu" + std::to_string(index)) / "dev",
             "508:" + std::to_string(index) + "\n");
}

void FakeSysfsTree::add_device_node(unsigned index) {
  write_file("dev/xpu" + std::to_string(index), "");
}

void FakeSysfsTree::remove_device_node(unsigned index) {
  fs::remove(root_ / ("dev/xpu" + std::to_string(index)));
}

void FakeSysfsTree::add_control_node() {
  write_file("dev/xpuctrl", "");
}

void FakeSysfsTree::add_card(const FakePciFunction& function, unsigned index) {
  add_pci_function(function);
  if (function.driver != "kunlun") return;
  add_device_node(index);
  if (function.vendor == 0x1d22 && function.device == 0x3684 && function.subsystem_vendor == 0 &&
      function.subsystem_device == 0)
    add_device_node(index + 1);
}

void FakeSysfsTree::set_proc_driver_version(std::string_view contents) {
  write_file("proc/xpu/version", contents);
}

void FakeSysfsTree::set_module_version(std::string_view contents) {
  write_file("sys/module/kunlun/version", contents);
}

void FakeSysfsTree::set_probe_errors(std::string_view contents) {
  write_file("proc/xpu/probe_error", contents);
}

void FakeSysfsTree::write_file(const fs::path& relative, std::string_view contents) {
  fs::path path = root_ / relative;
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  if (!out) throw std::runtime_error("fake sysfs: cannot write " + path.string());
}

void FakeSysfsTree::add_process_fd(unsigned pid, unsigned fd, const std::string& target) {
  const fs::path dir = root_ / "proc" / std::to_string(pid) / "fd";
  fs::create_directories(dir);
  fs::create_symlink(target, dir / std::to_string(fd));
}

std::string FakeSysfsTree::reset_written(std::string_view bus_id) const {
  std::ifstream in(function_dir(bus_id) / "reset");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace xpu::fakes
