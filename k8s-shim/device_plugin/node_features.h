// The node's XPU facts as node-feature-discovery (NFD) labels, in the format of NFD's `local`
// feature source (`features.d` files): one `<prefix>/<name>=<value>` line per label, `#`
// comment lines. Pure: no file system, no D-Bus.
//
// Every name carries its own prefix, `kunlunxin.com/` (the domain of the resource the plugin
// advertises), so NFD publishes it as written rather than under `feature.node.kubernetes.io/`
// (its prefix for unprefixed names, which NFD documents as going away). Names and values are
// valid Kubernetes label names and values whatever xpud reports.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/xpud_types.h"
#include "k8s-shim/label_value.h"
#include "k8s-shim/shim_options.h"

namespace shim {

inline constexpr std::string_view kNodeLabelPrefix = "kunlunxin.com/";
// NFD ignores a feature file larger than this.
inline constexpr std::size_t kMaxFeatureFileSize = 64 * 1024;

struct NodeFeatureOptions {
  MemoryUnit memory_unit = MemoryUnit::MiB;
  bool sriov = false;           // --enable-sriov: virtual functions advertised as <domain>/vxpu
  unsigned share_replicas = 0;  // shared mode: replicas per card; 0 = whole cards or memory form
  unsigned share_memory_unit_mib{};  // shared mode's memory form: MiB per unit; 0 = off
};

using NodeLabel = std::pair<std::string, std::string>;  // full name, value

// The labels for xpud's view, in a fixed order (so equal facts give byte-equal files):
//   xpu.count            physical cards
//   xpu.model            their model ("mixed" when they differ, "unknown" when nothing usable)
//   xpu.memory-<unit>    memory of the smallest card in --memory-unit, rounded down; left out
//                        unless xpud reports every card's memory
//   xpu.driver-version   left out when xpud reports none (or nothing usable)
//   xpu.vf.count         SR-IOV virtual functions xpud reports
//   xpu.sriov            true when virtual functions are advertised (--enable-sriov)
//   xpu.share            true in shared mode, with xpu.share.replicas, or in its memory form
//                        with xpu.share.memory-unit-mib
// Model and memory describe the physical cards, or the virtual functions on a node that has
// only those (a VM); both are left out on a node with neither.
// nullopt while xpud is not present: its last known facts stand.
std::optional<std::vector<NodeLabel>> node_feature_labels(const xpu::DeviceView& view,
                                                          const NodeFeatureOptions& options);

// The file: a comment naming the writer, then the lines.
std::string render_feature_file(const std::vector<NodeLabel>& labels);

// "memory-mib" and the like: the unit is in the name, so that a changed --memory-unit makes a
// selector stop matching instead of comparing numbers of another unit.
std::string memory_label_name(MemoryUnit unit);
std::uint64_t memory_in_unit(std::uint64_t bytes, MemoryUnit unit);

}  // namespace shim
