#include "k8s-shim/dra/slices/slice_content.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "common/pci_address.h"
#include "k8s-shim/dra/dra_names.h"
#include "k8s-shim/dra/offered_cards.h"
#include "k8s-shim/printable.h"

namespace shim::dra {

namespace {

// The API's limit on string and version attribute values.
constexpr std::size_t kMaxAttributeLength = 64;
// The highest NUMA node the standard attribute may carry: maxNUMANodes - 1
// (deviceattribute/numa_linux.go, after Linux's MAX_NUMNODES).
constexpr int kMaxStandardNumaNode = 1023;

bool is_numeric(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A numeric identifier without leading zeros, as semver requires.
std::string_view strip_leading_zeros(std::string_view digits) {
  while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
  return digits;
}

// Semver pre-release / build identifiers: non-empty, [0-9A-Za-z-], dot-separated.
bool valid_identifiers(std::string_view text) {
  if (text.empty()) return false;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = text.find('.', start);
    std::string_view part = text.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (part.empty()) return false;
    for (char c : part)
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-'))
        return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  while (true) {
    std::size_t at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

// resource.kubernetes.io/{pciBusID,pcieRoot,numaNode}, as the deviceattribute package's helpers
// make them (GetPCIBusIDAttribute, GetPCIeRootAttributeByPCIBusID, GetNUMANodeAttribute in the
// scalar form): a value they would refuse is left out and noted. xpud's own checks make that
// rare (its PciBusId is normalised, its PcieRoot read with the same rule); xpud's word is still
// checked rather than trusted.
// `pcie_root` empty where unknown (a function on vfio-pci, which xpud names no root for).
void put_standard_attributes(const std::string& pci_bus_id, const std::string& pcie_root,
                             int numa_node, SliceDevice& device,
                             std::vector<std::string>* omitted) {
  namespace s = standard_attribute;
  auto left_out = [&](std::string_view key, std::string why) {
    if (omitted)
      omitted->push_back(device.name + ": " + std::move(why) + ": " + std::string(key) +
                         " left out");
  };
  if (xpu::pci_address::is_extended_bdf(pci_bus_id))
    device.attributes[std::string(s::kPciBusId)] = pci_bus_id;
  else if (!pci_bus_id.empty())
    left_out(s::kPciBusId, "PciBusId \"" + shim::printable_excerpt(pci_bus_id) +
                               "\" is not an extended BDF (dddd:bb:dd.f, lower-case hex)");
  if (xpu::pci_address::is_pcie_root(pcie_root))
    device.attributes[std::string(s::kPcieRoot)] = pcie_root;
  else if (!pcie_root.empty())
    left_out(s::kPcieRoot,
             "PcieRoot \"" + shim::printable_excerpt(pcie_root) + "\" is not pciDDDD:BB");
  // -1 is no NUMA affinity, which must not be published (it would match every other such device).
  if (numa_node >= 0 && numa_node <= kMaxStandardNumaNode)
    device.attributes[std::string(s::kNumaNode)] = std::int64_t{numa_node};
  else if (numa_node > kMaxStandardNumaNode)
    left_out(s::kNumaNode, "NUMA node " + std::to_string(numa_node) + " above " +
                               std::to_string(kMaxStandardNumaNode));
}

// `items` in order, in parts of at most `size` each (none for no items).
template <typename T>
std::vector<std::vector<T>> in_parts(std::vector<T> items, std::size_t size) {
  std::vector<std::vector<T>> parts;
  for (std::size_t first = 0; first < items.size(); first += size) {
    const std::size_t last = std::min(items.size(), first + size);
    parts.emplace_back(
        std::make_move_iterator(std::next(items.begin(), static_cast<std::ptrdiff_t>(first))),
        std::make_move_iterator(std::next(items.begin(), static_cast<std::ptrdiff_t>(last))));
  }
  return parts;
}

// Virtual functions in the pool: each VF whose PF xpud names is a device of its own, with the
// attribute physicalFunction (which only VFs carry, for the DeviceClasses to tell them from
// cards), consuming its memory of the PF's counter set; the PF, whose SR-IOV is on, is not
// offered, but its counter set is there, as large as the PF or its VFs together, whichever is
// more, so every VF fits at once and a PF that a stale slice still offered would not fit beside
// them. A VF without a known PF is left out: nothing would keep it apart from its PF.
template <typename Note, typename Describe>
void add_virtual_functions(const xpu::DeviceView& view, ResourceSliceSpec& spec,
                           std::vector<CounterSet>& counter_sets, Note& note, Describe& describe) {
  const std::string memory(slice_attribute::kMemory);
  std::map<std::string, const xpu::DeviceInfo*> sriov_pfs;  // by bus id
  for (const xpu::DeviceInfo& device : view.devices)
    if (device.sriov_enabled && !device.is_virtual_function)
      sriov_pfs.emplace(device.pci_bus_id, &device);
  std::vector<const xpu::DeviceInfo*> vfs;
  for (const xpu::DeviceInfo& device : view.devices)
    if (device.is_virtual_function) vfs.push_back(&device);
  std::sort(vfs.begin(), vfs.end(),
            [](const auto* a, const auto* b) { return a->index < b->index; });
  std::map<unsigned, std::int64_t> pf_need;  // PF index -> its VFs' memory together
  for (const xpu::DeviceInfo* vf : vfs) {
    auto pf = sriov_pfs.find(vf->physical_function);
    if (vf->physical_function.empty() || pf == sriov_pfs.end()) {
      note(device_name(vf->index) +
           ": a virtual function whose physical function with SR-IOV "
           "on xpud does not name: not offered");
      continue;
    }
    if (vf->memory_total_bytes == 0 ||
        vf->memory_total_bytes > static_cast<std::uint64_t>(INT64_MAX)) {
      note(device_name(vf->index) + ": a virtual function of unknown memory: not offered");
      continue;
    }
    SliceDevice device = describe(*vf, std::int64_t{vf->index});
    // A bus id xpud gives is an extended BDF (12 characters), well inside the attribute limit.
    device.attributes[std::string(slice_attribute::kPhysicalFunction)] = vf->physical_function;
    const auto bytes = static_cast<std::int64_t>(vf->memory_total_bytes);
    device.consumes_counters = {CounterConsumption{
        .counter_set = counter_set_name(pf->second->index), .counters = {{memory, bytes}}}};
    pf_need[pf->second->index] += bytes;
    spec.devices.push_back(std::move(device));
  }
  for (const auto& [bus_id, pf] : sriov_pfs) {
    auto need = pf_need.find(pf->index);
    if (need == pf_need.end()) continue;
    const std::int64_t own = pf->memory_total_bytes > static_cast<std::uint64_t>(INT64_MAX)
                                 ? 0
                                 : static_cast<std::int64_t>(pf->memory_total_bytes);
    counter_sets.push_back(CounterSet{.name = counter_set_name(pf->index),
                                      .counters = {{memory, std::max(own, need->second)}}});
  }
}

// The functions on vfio-pci, after the compute devices: each a device of its own, by address,
// with the attribute vfio (which only they carry: the compute classes leave them out, the VFIO
// class selects on it), the address, the IOMMU group and what xpud knows of the function. No
// health and no capacity: vfio-pci holds the function whatever xpud says, and a VM takes it
// whole. A function whose address or group xpud should never send is left out and noted.
template <typename Note>
void add_vfio_functions(const xpu::DeviceView& view, ResourceSliceSpec& spec, Note& note,
                        std::vector<std::string>* omitted) {
  namespace a = slice_attribute;
  std::vector<const xpu::VfioFunctionInfo*> functions;
  std::set<std::string> seen;
  for (const xpu::VfioFunctionInfo& function : view.vfio_functions) {
    if (!is_offered_vfio_function(function)) {
      note("function \"" + shim::printable_excerpt(function.pci_bus_id) +
           "\" on vfio-pci, IOMMU group \"" + shim::printable_excerpt(function.iommu_group) +
           "\": not an extended BDF in a numbered group: not offered");
      continue;
    }
    if (seen.insert(function.pci_bus_id).second) functions.push_back(&function);
  }
  std::sort(functions.begin(), functions.end(),
            [](const auto* x, const auto* y) { return x->pci_bus_id < y->pci_bus_id; });
  for (const xpu::VfioFunctionInfo* function : functions) {
    SliceDevice device;
    device.name = vfio_device_name(function->pci_bus_id);
    device.attributes[std::string(a::kVfio)] = true;
    device.attributes[std::string(a::kPciBusId)] = function->pci_bus_id;
    device.attributes[std::string(a::kIommuGroup)] = std::stoll(function->iommu_group);
    device.attributes[std::string(a::kVirtualFunction)] = function->is_virtual_function;
    auto put_short = [&](std::string_view key, const std::string& value) {
      if (!value.empty() && value.size() <= kMaxAttributeLength)
        device.attributes[std::string(key)] = value;
    };
    put_short(a::kModel, function->model);
    put_short(a::kPciId, function->pci_id);
    // A VF's PF under a name of its own: physicalFunction is what the VF class selects on.
    if (function->is_virtual_function)
      put_short(a::kVfioPhysicalFunction, function->physical_function);
    if (function->numa_node >= 0)
      device.attributes[std::string(a::kNumaNode)] = std::int64_t{function->numa_node};
    put_standard_attributes(function->pci_bus_id, "", function->numa_node, device, omitted);
    spec.devices.push_back(std::move(device));
  }
}

}  // namespace

std::optional<std::string> semantic_driver_version(std::string_view raw) {
  if (!raw.empty() && raw.front() == 'v') raw.remove_prefix(1);
  // The numeric core ends at the first '-' (pre-release) or '+' (build).
  std::size_t core_end = raw.find_first_of("-+");
  std::string_view core = raw.substr(0, core_end);
  std::string_view tail = core_end == std::string_view::npos ? "" : raw.substr(core_end);

  std::vector<std::string_view> parts = split(core, '.');
  for (std::string_view part : parts)
    if (!is_numeric(part)) return std::nullopt;

  std::string version;
  for (std::size_t i = 0; i < 3; ++i) {
    if (i > 0) version += '.';
    version += i < parts.size() ? std::string(strip_leading_zeros(parts[i])) : "0";
  }
  if (parts.size() > 3) {
    // Extra components are build metadata; a tail would need merging, which no driver needs.
    if (!tail.empty()) return std::nullopt;
    version += '+';
    for (std::size_t i = 3; i < parts.size(); ++i) {
      if (i > 3) version += '.';
      version += parts[i];
    }
  } else if (!tail.empty()) {
    // Already semver-shaped: "-pre.release" and/or "+build".
    std::size_t plus = tail.find('+', 1);
    std::string_view first = tail.substr(1, plus == std::string_view::npos ? plus : plus - 1);
    if (!valid_identifiers(first)) return std::nullopt;
    if (tail.front() == '-' && plus != std::string_view::npos &&
        !valid_identifiers(tail.substr(plus + 1)))
      return std::nullopt;
    if (tail.front() == '+' && plus != std::string_view::npos) return std::nullopt;
    version += tail;
  }
  if (version.size() > kMaxAttributeLength) return std::nullopt;
  return version;
}

std::map<unsigned, unsigned> link_groups(const std::vector<xpu::DeviceInfo>& devices) {
  std::set<std::pair<unsigned, unsigned>> links;
  for (const xpu::DeviceInfo& device : devices)
    for (unsigned peer : device.linked_devices) {
      links.emplace(device.index, peer);
      links.emplace(peer, device.index);
    }
  std::vector<unsigned> indexes;
  indexes.reserve(devices.size());
  for (const xpu::DeviceInfo& device : devices) indexes.push_back(device.index);
  std::sort(indexes.begin(), indexes.end());
  indexes.erase(std::unique(indexes.begin(), indexes.end()), indexes.end());

  std::vector<std::vector<unsigned>> groups;  // in order of creation: the first fit wins
  std::map<unsigned, unsigned> group_of;
  for (unsigned index : indexes) {
    auto fits = [&](const std::vector<unsigned>& group) {
      return std::all_of(group.begin(), group.end(), [&](unsigned member) {
        return links.contains({index, member});
      });
    };
    auto group = std::find_if(groups.begin(), groups.end(), fits);
    if (group == groups.end()) {
      groups.push_back({index});
      group_of[index] = index;
    } else {
      group->push_back(index);
      group_of[index] = group->front();  // members join in index order: front() is the lowest
    }
  }
  return group_of;
}

ResourceSliceSpec desired_slice(const xpu::DeviceView& view, std::string_view node_name,
                                std::int64_t generation, std::vector<std::string>* omitted,
                                const TaintPolicy& taints) {
  return std::move(
      desired_slices(view, node_name, generation, omitted, taints, SharePolicy{}).front());
}

std::vector<ResourceSliceSpec> desired_slices(const xpu::DeviceView& reported,
                                              std::string_view node_name, std::int64_t generation,
                                              std::vector<std::string>* omitted,
                                              const TaintPolicy& taints,
                                              const SharePolicy& shares) {
  namespace a = slice_attribute;
  auto note = [&](std::string why) {
    if (omitted) omitted->push_back(std::move(why));
  };
  // A card xpud still lists while it lists it on vfio-pci too (its discovery not yet run after a
  // bind) is in the VFIO pool only.
  xpu::DeviceView view = reported;
  std::erase_if(view.devices, [&](const xpu::DeviceInfo& device) {
    return is_on_vfio(device, reported.vfio_functions);
  });

  ResourceSliceSpec spec;
  spec.driver = std::string(kDriverName);
  spec.node_name = std::string(node_name);
  spec.pool = SlicePool{
      .name = std::string(node_name), .generation = generation, .resource_slice_count = 1};

  std::vector<xpu::DeviceInfo> cards;
  for (const xpu::DeviceInfo& device : view.devices)
    if (is_offered_card(device)) cards.push_back(device);
  std::sort(cards.begin(), cards.end(),
            [](const auto& a, const auto& b) { return a.index < b.index; });
  // Links to a virtual function, to a PF with SR-IOV on (or to a card not listed) cannot make a
  // group.
  std::map<unsigned, unsigned> groups = link_groups(cards);

  std::optional<std::string> driver_version;
  if (!view.manager.driver_version.empty()) {
    driver_version = semantic_driver_version(view.manager.driver_version);
    if (!driver_version)
      note("driverVersion \"" + view.manager.driver_version +
           "\" cannot be made a semantic version: attribute left out");
  }

  auto describe = [&](const xpu::DeviceInfo& card, std::int64_t link_group) {
    SliceDevice device;
    device.name = device_name(card.index);
    auto put_string = [&](std::string_view key, const std::string& value) {
      if (value.empty()) return;  // unknown: better absent than an empty string to match on
      if (value.size() > kMaxAttributeLength) {
        note(device.name + ": " + std::string(key) + " longer than " +
             std::to_string(kMaxAttributeLength) + " characters: attribute left out");
        return;
      }
      device.attributes[std::string(key)] = value;
    };
    put_string(a::kModel, card.model);
    put_string(a::kUuid, card.uuid);
    put_string(a::kPciBusId, card.pci_bus_id);
    device.attributes[std::string(a::kIndex)] = std::int64_t{card.index};
    if (card.numa_node >= 0)
      device.attributes[std::string(a::kNumaNode)] = std::int64_t{card.numa_node};
    if (driver_version)
      device.attributes[std::string(a::kDriverVersion)] = Version{*driver_version};
    device.attributes[std::string(a::kHealthy)] = card.healthy;
    device.attributes[std::string(a::kLinkGroup)] = link_group;
    put_standard_attributes(card.pci_bus_id, card.pcie_root, card.numa_node, device, omitted);
    if (card.memory_total_bytes > static_cast<std::uint64_t>(INT64_MAX))
      note(device.name + ": memory size out of range: capacity left out");
    else
      device.capacity[std::string(a::kMemory)] = static_cast<std::int64_t>(card.memory_total_bytes);
    device.taints = taints_for(card, taints);
    return device;
  };
  for (const xpu::DeviceInfo& card : cards)
    spec.devices.push_back(describe(card, std::int64_t{groups.at(card.index)}));
  const std::size_t whole_cards = spec.devices.size();
  std::vector<CounterSet> counter_sets;
  add_virtual_functions(view, spec, counter_sets, note, describe);
  add_vfio_functions(view, spec, note, omitted);

  std::vector<SliceDevice> shared_devices;
  for (std::size_t i = 0; shares.enabled && i < whole_cards; ++i) {
    SliceDevice& device = spec.devices[i];
    auto memory = device.capacity.find(std::string(a::kMemory));
    const unsigned index =
        static_cast<unsigned>(std::get<std::int64_t>(device.attributes.at(std::string(a::kIndex))));
    const bool known = memory != device.capacity.end() && memory->second > 0;
    if (!known || memory->second < shares.minimum) {
      note(device.name + ": memory " +
           (known ? std::to_string(memory->second) + " bytes" : std::string("unknown")) +
           ", below the share minimum of " + std::to_string(shares.minimum) +
           " bytes: not offered as shares");
      continue;
    }
    const std::string set = counter_set_name(index);
    counter_sets.push_back(
        CounterSet{.name = set, .counters = {{std::string(a::kMemory), memory->second}}});
    device.consumes_counters = {CounterConsumption{
        .counter_set = set, .counters = {{std::string(a::kMemory), memory->second}}}};
    SliceDevice shared = device;
    shared.name = shared_device_name(index);
    shared.allow_multiple_allocations = true;
    shared.request_policies[std::string(a::kMemory)] =
        CapacityRequestPolicy{.default_value = shares.default_memory,
                              .min = shares.minimum,
                              .max = std::nullopt,
                              .step = shares.step};
    shared_devices.push_back(std::move(shared));
  }
  for (SliceDevice& shared : shared_devices) spec.devices.push_back(std::move(shared));
  std::sort(counter_sets.begin(), counter_sets.end(), [](const CounterSet& a, const CounterSet& b) {
    return device_index(a.name) < device_index(b.name);
  });

  std::vector<ResourceSliceSpec> slices;
  auto empty_slice = [&spec] {
    return ResourceSliceSpec{.driver = spec.driver,
                             .node_name = spec.node_name,
                             .pool = spec.pool,
                             .devices = {},
                             .shared_counters = {}};
  };
  for (std::vector<SliceDevice>& part : in_parts(std::move(spec.devices), kMaxDevicesPerSlice)) {
    slices.push_back(empty_slice());
    slices.back().devices = std::move(part);
  }
  if (slices.empty()) slices.push_back(empty_slice());  // a node without cards says so
  for (std::vector<CounterSet>& part : in_parts(std::move(counter_sets), kMaxCounterSetsPerSlice)) {
    slices.push_back(empty_slice());
    slices.back().shared_counters = std::move(part);
  }
  for (ResourceSliceSpec& slice : slices)
    slice.pool.resource_slice_count = static_cast<std::int64_t>(slices.size());
  return slices;
}

std::vector<ResourceSliceSpec> without_counters(std::vector<ResourceSliceSpec> slices) {
  for (ResourceSliceSpec& slice : slices) {
    std::erase_if(slice.devices,
                  [](const SliceDevice& device) { return device.allow_multiple_allocations; });
    for (SliceDevice& device : slice.devices) device.consumes_counters.clear();
    slice.shared_counters.clear();
  }
  // The first slice stays, even empty (a node without cards says so); the others left empty (the
  // counters' slices, a part that held only shares) go.
  if (slices.size() > 1)
    slices.erase(
        std::remove_if(std::next(slices.begin()), slices.end(),
                       [](const ResourceSliceSpec& slice) { return slice.devices.empty(); }),
        slices.end());
  for (ResourceSliceSpec& slice : slices)
    slice.pool.resource_slice_count = static_cast<std::int64_t>(slices.size());
  return slices;
}

}  // namespace shim::dra
