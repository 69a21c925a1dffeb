#include "k8s-shim/device_plugin/node_features.h"

#include <algorithm>
#include <limits>

#include "common/ascii.h"
namespace shim {
namespace {

std::string label(std::string_view name) {
  return std::string(kNodeLabelPrefix) + "xpu." + std::string(name);
}

// Model and memory of a set of cards.
void describe_cards(const std::vector<const xpu::DeviceInfo*>& cards, MemoryUnit unit,
                    std::vector<NodeLabel>& labels) {
  if (cards.empty()) return;
  std::optional<std::string> model;
  bool mixed = false;
  for (const auto* card : cards) {
    std::string this_model = sanitize_label_value(card->model).value_or("unknown");
    if (model && *model != this_model) mixed = true;
    model = std::move(this_model);
  }
  labels.emplace_back(label("model"), mixed ? "mixed" : *model);

  // The smallest card, so that a selector on it holds for whichever card a pod is given.
  std::uint64_t smallest = std::numeric_limits<std::uint64_t>::max();
  for (const auto* card : cards) smallest = std::min(smallest, card->memory_total_bytes);
  if (smallest > 0)  // 0: some card's memory is unknown (e.g. the sysfs backend)
    labels.emplace_back(label(memory_label_name(unit)),
                        std::to_string(memory_in_unit(smallest, unit)));
}

}  // namespace

std::string memory_label_name(MemoryUnit unit) {
  switch (unit) {
    case MemoryUnit::B:
      return "memory-b";
    case MemoryUnit::KiB:
      return "memory-kib";
    case MemoryUnit::MiB:
      return "memory-mib";
    case MemoryUnit::GiB:
      return "memory-gib";
  }
  return "memory-b";
}

std::uint64_t memory_in_unit(std::uint64_t bytes, MemoryUnit unit) {
  switch (unit) {
    case MemoryUnit::B:
      return bytes;
    case MemoryUnit::KiB:
      return bytes >> 10;
    case MemoryUnit::MiB:
      return bytes >> 20;
    case MemoryUnit::GiB:
      return bytes >> 30;
  }
  return bytes;
}

std::optional<std::vector<NodeLabel>> node_feature_labels(const xpu::DeviceView& view,
                                                          const NodeFeatureOptions& options) {
  if (!view.xpud_present) return std::nullopt;
  std::vector<const xpu::DeviceInfo*> physical, virtual_functions;
  for (const auto& device : view.devices)
    (device.is_virtual_function ? virtual_functions : physical).push_back(&device);

  std::vector<NodeLabel> labels;
  labels.emplace_back(label("count"), std::to_string(physical.size()));
  describe_cards(physical.empty() ? virtual_functions : physical, options.memory_unit, labels);
  if (auto version = sanitize_label_value(view.manager.driver_version))
    labels.emplace_back(label("driver-version"), *version);
  labels.emplace_back(label("vf.count"), std::to_string(virtual_functions.size()));
  labels.emplace_back(label("sriov"), options.sriov ? "true" : "false");
  const bool by_memory = options.share_memory_unit_mib > 0;
  labels.emplace_back(label("share"), options.share_replicas > 0 || by_memory ? "true" : "false");
  if (by_memory)
    labels.emplace_back(label("share.memory-unit-mib"),
                        std::to_string(options.share_memory_unit_mib));
  else if (options.share_replicas > 0)
    labels.emplace_back(label("share.replicas"), std::to_string(options.share_replicas));
  return labels;
}

std::string render_feature_file(const std::vector<NodeLabel>& labels) {
  // Comment lines must not start with "# +": NFD reads those as directives (+expiry-time...).
  std::string text =
      "# XPU facts of this node, written by xpu-k8s-shim device-plugin for "
      "node-feature-discovery's\n"
      "# local source; rewritten when they change, removed when the device plugin stops.\n";
  for (const auto& [name, value] : labels) {
    text += name;
    text += '=';
    text += value;
    text += '\n';
  }
  return text;
}

}  // namespace shim
