// A fake sysfs/procfs/dev tree in a temporary directory, laid out like the real one, for tests of
// anything that reads the kernel's view of Kunlunxin cards (the sysfs backend, xpud with
// [sysfs] root = tree.root()). The directory is removed when the tree goes out of scope.
//
// Test helper: setup failures throw std::runtime_error (gtest reports them as test errors).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace xpu::fakes {

// A PCI Express function's link files as drivers/pci/pci-sysfs.c writes them (pci_speed_string()
// of drivers/pci/probe.c for the speeds, "%u\n" for the widths).
struct FakePcieLink {
  std::string current_speed = "16.0 GT/s PCIe";
  unsigned current_width = 16;
  std::string max_speed = "16.0 GT/s PCIe";
  unsigned max_width = 16;
};

// AER counts of one function: what its aer_dev_correctable, aer_dev_nonfatal and aer_dev_fatal
// say in their TOTAL_ERR_* lines (write_aer_counts).
struct FakeAerCounts {
  std::uint64_t correctable = 0;
  std::uint64_t nonfatal = 0;
  std::uint64_t fatal = 0;
};

// One PCI function as the kernel shows it under /sys/bus/pci/devices/<bus_id>/.
struct FakePciFunction {
  std::string bus_id;  // entry name, e.g. "0000:3b:00.0"
  std::uint16_t vendor = 0x1d22;
  std::uint16_t device = 0x3684;
  std::uint16_t subsystem_vendor = 0x0002;  // 2/1: an R200
  std::uint16_t subsystem_device = 0x0001;
  int numa_node = -1;
  std::string driver = "kunlun";           // empty: bound to no driver
  std::string physical_function;           // VFs: bus id of their PF (already added)
  std::optional<unsigned> sriov_totalvfs;  // PFs that can do SR-IOV
  unsigned sriov_numvfs = 0;
  // Every PCI Express function has the four link files; nullopt: none (a conventional PCI
  // device). A VF's link registers are reserved, so kunlunxin_vf() gives "Unknown" and 0.
  std::optional<FakePcieLink> pcie_link = FakePcieLink{};
  // The aer_dev_* files (CONFIG_PCIEAER and the function's AER capability); nullopt: none.
  std::optional<FakeAerCounts> aer = FakeAerCounts{};
  // The function's reset methods as reset_method lists them ("flr bus"); with them the kernel
  // makes the `reset` file too (drivers/pci/pci-sysfs.c makes both only for a function it can
  // reset). nullopt: neither file. Empty: an operator turned resets off (Linux 5.15 on).
  std::optional<std::string> reset_methods = std::string("flr bus");
};

// Kunlunxin R-series board with subsystem 2/<subsystem_device> (1 R200, 2 R100, 3 R300...).
FakePciFunction kunlunxin_r_series(std::string bus_id, std::uint16_t subsystem_device,
                                   int numa_node = -1);
// A first-generation board (subsystem 0/0, two chips on a K200).
FakePciFunction kunlunxin_k200(std::string bus_id, int numa_node = -1);
// A P800 (device 0x3688).
FakePciFunction kunlunxin_p800(std::string bus_id, int numa_node = -1);
// A KL2 SR-IOV virtual function (device 0x3685) of the PF at pf_bus_id.
FakePciFunction kunlunxin_vf(std::string bus_id, std::string pf_bus_id, int numa_node = -1);
// Anything else (a NIC, a bridge...).
FakePciFunction other_pci_function(std::string bus_id, std::uint16_t vendor, std::uint16_t device);

class FakeSysfsTree {
 public:
  // How bus entries look: Symlink as in real sysfs (sys/bus/pci/devices/<bdf> links to
  // sys/devices/pci<domain>:<bus>/<bdf>), or plain directories.
  enum class EntryStyle { Symlink, Directory };

  explicit FakeSysfsTree(EntryStyle style = EntryStyle::Symlink);
  ~FakeSysfsTree();
  FakeSysfsTree(const FakeSysfsTree&) = delete;
  FakeSysfsTree& operator=(const FakeSysfsTree&) = delete;

  // The fake "/": what the backend gets as its root.
  const std::filesystem::path& root() const { return root_; }

  // Creates the function's directory, attribute files and driver/physfn links.
  // Returns the function's real directory (the symlink's target in Symlink style).
  std::filesystem::path add_pci_function(const FakePciFunction& function);
  // Removes the bus entry and the function's directory, as a hot unplug does.
  void remove_pci_function(std::string_view bus_id);
  // The function's real directory.
  std::filesystem::path function_dir(std::string_view bus_id) const;
  // Overwrites (or creates) one attribute file with raw bytes.
  void write_attribute(std::string_view bus_id, std::string_view name, std::string_view contents);
  // The function's four link files (FakePcieLink).
  void write_pcie_link(std::string_view bus_id, const FakePcieLink& link);
  // aer_dev_correctable, aer_dev_nonfatal and aer_dev_fatal as drivers/pci/pcie/aer.c writes them:
  // one "NAME COUNT" line per error type the kernel names, the count on the first, then the
  // TOTAL_ERR_* line with the same count.
  void write_aer_counts(std::string_view bus_id, const FakeAerCounts& counts);
  // Binds the function to `driver` (empty: unbinds it).
  void bind_driver(std::string_view bus_id, std::string_view driver);
  // Puts the function into IOMMU group `group`, as drivers/iommu/iommu.c shows it:
  // <function>/iommu_group -> sys/kernel/iommu_groups/<group>, whose devices/<bus id> links back.
  void add_to_iommu_group(std::string_view bus_id, unsigned group);
  // The class device the driver creates for /dev/xpu<index> under the function:
  // <function>/<class_name>/xpu<index>/dev.
  void publish_class_device(std::string_view bus_id, unsigned index,
                            std::string_view class_name = "xpu");

  // /dev/xpu<index> and /dev/xpuctrl (empty regular files: existence is what is read).
  void add_device_node(unsigned index);
  void remove_device_node(unsigned index);
  void add_control_node();
  // Adds a PCI function and, when it is bound to kunlun, its /dev/xpu<index> node(s):
  // `index`, plus index + 1 for a K200.
  void add_card(const FakePciFunction& function, unsigned index);

  // /proc/xpu/version, /sys/module/kunlun/version and /proc/xpu/probe_error, verbatim.
  void set_proc_driver_version(std::string_view contents);
  void set_module_version(std::string_view contents);
  void set_probe_errors(std::string_view contents);

  // /proc/<pid>/fd/<fd> as a link to `target` (an absolute path inside the tree, or any text:
  // a process's fd that names no file, "anon_inode:[eventfd]").
  void add_process_fd(unsigned pid, unsigned fd, const std::string& target);
  // Times a reset of the function was written (`reset` holds what was written, "1" each time).
  std::string reset_written(std::string_view bus_id) const;

  // Any file under the root (relative path), creating its parent directories.
  void write_file(const std::filesystem::path& relative, std::string_view contents);

 private:
  std::filesystem::path entry_path(std::string_view bus_id) const;
  void link(const std::filesystem::path& link, const std::filesystem::path& target);

  std::filesystem::path root_;
  EntryStyle style_;
};

}  // namespace xpu::fakes
