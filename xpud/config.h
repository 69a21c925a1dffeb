// xpud's configuration: /etc/xpud/xpud.conf plus xpud.conf.d/*.conf in name order, later files
// overriding earlier ones key by key. Unknown sections or keys and bad values are errors that
// name the file, the line and the reason.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <spdlog/common.h>

#include "common/result.h"
#include "xpud/backends/topology_quirks.h"

namespace xpud {

inline constexpr const char* kDefaultConfigPath = "/etc/xpud/xpud.conf";

enum class CdiMode { kAuto, kOn, kOff };

// [pcie] What a PCIe finding that need not mean a broken card does to it: `warn` keeps it Healthy
// with a HealthWarnings entry and a journal line, `unhealthy` takes it out with a reason of its
// own. A new fatal AER error always takes the card out (sampling/pcie_health.h says why).
enum class PcieAction { kWarn, kUnhealthy };

struct PcieHealthPolicy {
  // A link slower or narrower than the card can do. A warning by default: the card still
  // computes, often only its transfers are slower, and some cards lower their link speed at
  // idle to save power; an operator who wants such cards out says so.
  PcieAction downtrain = PcieAction::kWarn;
  // A new uncorrectable error the link survived (ERR_NONFATAL: the transaction was lost, the
  // link was not): a warning by default, since the kernel's AER recovery handles it and one
  // such error does not make a card unusable.
  PcieAction nonfatal = PcieAction::kWarn;
  // How long a new error (fatal, or nonfatal) keeps its mark on the card after the last one the
  // kernel counted: long enough for the scheduler to move work off and for an operator or a
  // recovery to see it, short enough that a card whose link recovered comes back by itself.
  std::chrono::milliseconds error_hold{900000};

  bool operator==(const PcieHealthPolicy&) const = default;
};

// [recovery] Resetting a card without a human (xpud/recovery/card_recovery.h). Off by default: a
// reset ends whatever runs on the card, so an operator turns it on knowingly.
struct RecoveryPolicy {
  // ResetDevice (root, xpuctl reset) may reset a card at all.
  bool enabled = false;
  // xpud resets by itself a card Unhealthy for `unhealthy_for` with no user (needs `enabled`).
  bool automatic = false;
  // Resets of one card within any hour (a sliding window), by hand and automatic together: a
  // card that fails again right after each reset is left out rather than reset in a loop, and
  // one bad card does not use up the allowance of the others.
  unsigned max_resets_per_hour = 3;
  // How long a card must be Unhealthy, with no process on it, before the automatic reset: long
  // enough for a fault the driver clears by itself and for the kubelet to move the pod off.
  std::chrono::milliseconds unhealthy_for{300000};
  // How long a reset card has to read Healthy again before the reset counts as failed.
  std::chrono::milliseconds check_timeout{30000};

  bool operator==(const RecoveryPolicy&) const = default;
};

// Most entries [xpuml] library may list.
inline constexpr std::size_t kMaxXpumlLibraries = 16;

// The default of [xpuml] library: the vendor's runtime root (libxpu-container's
// src/nvc_internal.h loads exactly this file), then the loader's search under the versioned name
// and the unversioned one the vendor's Go bindings (go-xpuml) and device plugin image use. Inline
// so that a Config stays constructible from the header alone.
inline std::vector<std::filesystem::path> default_xpuml_libraries() {
  return {"/usr/local/xpu/lib64/libxpuml.so.1", "libxpuml.so.1", "libxpuml.so"};
}

struct Config {
  // [daemon]
  std::string backend = "auto";  // auto | xpuml | sysfs | sim
  spdlog::level::level_enum log_level = spdlog::level::info;
  // [sampling]
  std::chrono::milliseconds interval{1000};
  // Longest a single driver call may take before the sample counts as failed.
  std::chrono::milliseconds call_timeout{2000};
  // Consecutive failed reads of a card before it is reported Unhealthy.
  unsigned failure_threshold = 3;
  // How long cards keep their last health while the driver is stalled (a timed-out call has not
  // returned) before they turn Unhealthy with reason "driver stalled". Long enough for a driver
  // that recovers by itself (a reset of one card takes a few seconds), short enough that the
  // scheduler stops placing work on a node whose driver is gone.
  std::chrono::milliseconds stall_grace{30000};
  // Safety net under event-driven discovery: how often the cards are looked for even without a
  // device event (a missed uevent, no udev in a container).
  std::chrono::milliseconds rescan_interval{60000};
  // [release_check] The check of a card its last process has left (sampling/release_check.h):
  // with no process on it, its used memory must be back at or below idle_memory_mib within
  // timeout_ms, or the card is Unhealthy "memory not released" until it is.
  bool release_check = true;
  std::chrono::milliseconds release_timeout{30000};
  std::uint64_t release_idle_memory_mib = 256;
  // [xpuml] library: where libxpuml may be, tried in order; the first that loads and has the
  // required symbols wins (xpuml::Library::open_first). Written as paths separated by blanks
  // (so no entry may contain one); each an absolute path or a bare file name, which the dynamic
  // loader searches for (ld.so.cache, the default directories). The default: the vendor's
  // runtime root, then the loader's search under the versioned and the unversioned name (the
  // sources: docs/hardware.md, "Where libxpuml is").
  std::vector<std::filesystem::path> xpuml_libraries = default_xpuml_libraries();
  // [sysfs]
  std::filesystem::path sysfs_root = "/";
  // [topology] The link table of the hardware backends (xpud/backends/topology.quirk); the
  // default is where the build installs it, /usr/share/xpud/topology.quirk in the packages.
  std::filesystem::path topology_quirks = topology::default_link_table_path();
  // [sim]
  unsigned sim_devices = 8;
  std::string sim_model = "R200";
  std::uint64_t sim_memory_mib = 32768;
  // [sriov]
  // Whether the cluster (the device plugin, through xpud-api-proxy) may change the number of
  // SR-IOV virtual functions with ConfigureVirtualFunctions. Root on the host always may.
  bool allow_cluster_reconfigure = false;
  // [cxpu] The xpuctl that OCI hooks run on the host to make a memory share's cXPU instance
  // (Manager.InstanceHook). Read at start.
  std::filesystem::path instance_hook_program = "/usr/bin/xpuctl";
  // [cdi] The Container Device Interface spec of the cards (cdi_spec.h). `auto` writes it when
  // xpud serves the system bus, i.e. when it is the host's daemon; an xpud on a private bus
  // (--bus-address, --session: tests, demos) is not, and would replace the host daemon's spec.
  CdiMode cdi_mode = CdiMode::kAuto;
  std::filesystem::path cdi_directory = "/var/run/cdi";
  std::string cdi_file = "kunlunxin-xpu.json";
  // [pcie] downtrain, nonfatal, error_hold_ms: see PcieHealthPolicy.
  PcieHealthPolicy pcie;
  // [recovery] enabled, auto, max_resets_per_hour, unhealthy_for_ms, check_timeout_ms.
  RecoveryPolicy recovery;

  bool operator==(const Config&) const = default;
};

// Reads `path` and then `<path>.d/*.conf` (sorted). A missing main file is not an error when
// `must_exist` is false (the daemon runs on defaults); a missing drop-in directory never is.
xpu::Result<Config> load_config(const std::filesystem::path& path, bool must_exist);

// The drop-ins load_config reads after `path`: `<path>.d/*.conf`, regular files, sorted; none
// when the directory does not exist.
xpu::Result<std::vector<std::filesystem::path>> config_dropins(const std::filesystem::path& path);

}  // namespace xpud
