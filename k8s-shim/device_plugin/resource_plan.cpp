#include "k8s-shim/device_plugin/resource_plan.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "common/ascii.h"
#include "common/fnv1a.h"
#include "common/names.h"
#include "k8s-shim/cards/sriov_physical_function.h"
#include "k8s-shim/device_plugin/vfio_resource.h"
#include "k8s-shim/resource_name.h"

namespace shim {
namespace {

constexpr std::size_t kMaxModelNameLength = 63;

// The part after '/' in a per-model resource name, short enough for `suffix` to follow.
std::string model_resource_part(std::string_view model, std::string_view suffix = {}) {
  std::string part;
  for (char c : model)
    part += (xpu::is_ascii_alnum(c) || c == '-' || c == '_' || c == '.') ? c : '-';
  auto first = std::find_if(part.begin(), part.end(), xpu::is_ascii_alnum);
  auto last = std::find_if(part.rbegin(), part.rend(), xpu::is_ascii_alnum).base();
  part = first < last ? std::string(first, last) : std::string();
  if (part.size() > kMaxModelNameLength - suffix.size())
    part.resize(kMaxModelNameLength - suffix.size());
  while (!part.empty() && !xpu::is_ascii_alnum(part.back())) part.pop_back();
  return (part.empty() ? "unknown" : part) + std::string(suffix);
}

std::string model_socket_name(std::string_view prefix, std::string_view model) {
  std::string name(prefix);
  for (char c : model_resource_part(model)) {
    char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    name += (xpu::is_ascii_alnum(lower) || lower == '-' || lower == '.') ? lower : '-';
  }
  return name + ".sock";
}

std::size_t decimal_digits(unsigned value) {
  return std::to_string(value).size();
}

std::string fnv1a_hex(std::string_view text) {
  char buffer[9];
  std::snprintf(buffer, sizeof buffer, "%08x", xpu::fnv1a_32(text));
  return buffer;
}

std::string with_suffix(std::string_view socket, std::string_view suffix) {
  std::string_view stem = socket.substr(0, socket.size() - std::string_view(".sock").size());
  return std::string(stem) + "-" + std::string(suffix) + ".sock";
}

// Whole units of `unit_bytes` in a card's memory, before the per-card cap.
std::uint64_t memory_units_of(std::uint64_t memory_total_bytes, std::uint64_t unit_bytes) {
  return unit_bytes == 0 ? 0 : memory_total_bytes / unit_bytes;
}

// Why `card` gives fewer units of `resource` than its memory holds (none, or only the cap), or
// empty when it gives them all.
std::string memory_units_problem(const PluginDevice& card, std::uint64_t units,
                                 const std::string& resource, unsigned unit_mib) {
  const std::string where = "device " + xpu::names::device_name(card.index);
  if (card.memory_total_bytes == 0)
    return where + " gives no " + resource + " units: xpud does not report its memory size";
  if (units == 0)
    return where + " gives no " + resource + " units: its memory (" +
           std::to_string(card.memory_total_bytes >> 20) + " MiB) is less than one unit (" +
           std::to_string(unit_mib) + " MiB)";
  if (units > kMaxMemoryUnitsPerCard)
    return where + " gives only " + std::to_string(kMaxMemoryUnitsPerCard) + " of its " +
           std::to_string(units) + " " + resource +
           " units (the most one card may give); a larger --xpu-share-memory-unit-mib offers "
           "all of its memory";
  return {};
}

}  // namespace

std::string socket_name_for_model(std::string_view model) {
  return model_socket_name("kunlunxin-xpu-", model);
}

xpu::Status validate_device_node(std::string_view path) {
  if (!path.starts_with("/dev/") || path.size() == 5)
    return xpu::Error{"device node '" + std::string(path) + "' is not a path under /dev/"};
  for (std::size_t start = 1; start <= path.size();) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..")
      return xpu::Error{"device node '" + std::string(path) +
                        "' has an empty, '.' or '..' component"};
    start = end + 1;
  }
  for (char c : path)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == ',' || c == ':')
      return xpu::Error{"device node '" + std::string(path) +
                        "' contains a control character, ',' or ':'"};
  return xpu::ok_status();
}

std::string sriov_count_mismatch(const ResourceConfig& config, const xpu::DeviceView& view) {
  if (!config.enable_sriov || config.sriov_num_vfs == 0 || !view.xpud_present) return {};
  std::size_t virtual_functions = 0;
  std::size_t physical = 0;
  for (const auto& device : view.devices)
    ++(device.is_virtual_function ? virtual_functions : physical);
  const std::size_t expected = std::size_t{config.sriov_num_vfs} * physical;
  if (virtual_functions == expected) return {};
  return "xpud reports " + std::to_string(virtual_functions) + " SR-IOV virtual functions, but " +
         "--sriov-num-vfs " + std::to_string(config.sriov_num_vfs) + " x " +
         std::to_string(physical) + " physical cards expects " + std::to_string(expected) +
         "; change it on the host (xpuctl configure-vfs INDEX COUNT, while no process uses the "
         "card), "
         "or let the device plugin ask xpud for it (--reconfig-vxpu, allowed by [sriov] "
         "allow_cluster_reconfigure = true in xpud's configuration)";
}

ResourcePlan plan_resources(const ResourceConfig& config, const xpu::DeviceView& view,
                            const std::map<std::string, std::string>& known_sockets) {
  ResourcePlan plan;
  std::map<std::string, ResourceState> by_name;
  std::set<std::string> sockets_taken;
  for (const auto& [resource, socket] : known_sockets) {
    by_name.emplace(resource, ResourceState{resource, socket, {}, false});
    sockets_taken.insert(socket);
  }
  auto resource_for = [&](const std::string& resource, std::string socket) -> ResourceState& {
    auto it = by_name.find(resource);
    if (it != by_name.end()) return it->second;
    if (sockets_taken.contains(socket)) socket = with_suffix(socket, fnv1a_hex(resource));
    sockets_taken.insert(socket);
    return by_name.emplace(resource, ResourceState{resource, socket, {}, false}).first->second;
  };
  const std::string domain(resource_domain(config.resource_name));
  const std::uint64_t unit_bytes = std::uint64_t{config.share_memory_unit_mib} << 20;
  const bool by_memory = unit_bytes > 0;
  const bool shared = config.share_replicas > 0 || by_memory;
  const std::string vf_resource = domain + "/" + std::string(kVirtualFunctionResource);
  const std::string shared_resource =
      domain + "/" + std::string(by_memory ? kSharedMemoryResource : kSharedResource);
  const std::string_view shared_socket = by_memory ? kSharedMemorySocketName : kSharedSocketName;
  if (!config.per_model) {
    auto& state = resource_for(shared ? shared_resource : config.resource_name,
                               std::string(shared ? shared_socket : kDefaultSocketName));
    state.shared = shared;
    if (shared) state.memory_unit_bytes = unit_bytes;
    if (config.enable_sriov) resource_for(vf_resource, std::string(kVirtualFunctionSocketName));
  }
  if (auto mismatch = sriov_count_mismatch(config, view); !mismatch.empty())
    plan.problems.push_back(std::move(mismatch));

  // xpud is outside input: keep only devices that can be advertised without ambiguity.
  std::vector<const xpu::DeviceInfo*> accepted;
  std::set<std::string> ids;
  std::map<unsigned, std::string> id_of_index;
  std::vector<const xpu::DeviceInfo*> ordered;
  std::string skipped_functions;
  std::string sriov_physical_functions;
  // A card is offered in one pool: one on vfio-pci is the VFIO resource's alone.
  const std::set<std::string> on_vfio = vfio_bus_ids(view);
  std::string vfio_cards;
  for (const auto& device : view.devices) ordered.push_back(&device);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto* a, const auto* b) { return a->index < b->index; });
  for (const auto* device : ordered) {
    const std::string name = xpu::names::device_name(device->index);
    const std::string where = "device " + name;
    if (on_vfio.contains(device->pci_bus_id)) {
      vfio_cards += (vfio_cards.empty() ? "" : ", ") + name;
      continue;
    }
    // With or without --enable-sriov, whole or shared (the rule the DRA driver applies too).
    if (is_sriov_physical_function(*device)) {
      sriov_physical_functions += (sriov_physical_functions.empty() ? "" : ", ") + name;
      continue;
    }
    if (device->is_virtual_function && !config.enable_sriov) {
      skipped_functions += (skipped_functions.empty() ? "" : ", ") + name;
      continue;
    }
    if (auto status = validate_device_id(device->uuid); !status) {
      plan.problems.push_back(where + " is not advertised: " + status.error());
      continue;
    }
    if (id_of_index.contains(device->index)) {
      plan.problems.push_back(where + " is not advertised: its index is reported twice");
      continue;
    }
    if (!ids.insert(device->uuid).second) {
      plan.problems.push_back(where + " is not advertised: UUID '" + device->uuid +
                              "' belongs to another device too");
      continue;
    }
    id_of_index.emplace(device->index, device->uuid);
    if (device->is_virtual_function) {
      xpu::Status nodes_ok = device->device_nodes.empty()
                                 ? xpu::Status{xpu::Error{"xpud lists no device node for it"}}
                                 : xpu::ok_status();
      for (const auto& node : device->device_nodes)
        if (nodes_ok) nodes_ok = validate_device_node(node);
      if (!nodes_ok) {
        plan.problems.push_back(
            where + " (SR-IOV virtual function) is not advertised: " + nodes_ok.error());
        continue;
      }
    } else if (shared) {
      // The longest ID this card gets: its last replica or memory unit.
      const std::uint64_t copies =
          by_memory
              ? std::min<std::uint64_t>(memory_units_of(device->memory_total_bytes, unit_bytes),
                                        kMaxMemoryUnitsPerCard)
              : config.share_replicas;
      const std::size_t id_length =
          device->uuid.size() + kReplicaSeparator.size() +
          (by_memory ? kMemoryUnitMark.size() : 0) +
          decimal_digits(static_cast<unsigned>(copies > 0 ? copies - 1 : 0));
      if (id_length > kMaxDeviceIdLength) {
        plan.problems.push_back(where + " is not shared: UUID '" + device->uuid + "' plus the " +
                                (by_memory ? "memory unit" : "replica") +
                                " suffix would be longer than " +
                                std::to_string(kMaxDeviceIdLength) + " characters");
        continue;
      }
    }
    accepted.push_back(device);
  }
  if (!skipped_functions.empty())
    plan.notices.push_back("SR-IOV virtual functions " + skipped_functions +
                           " are not advertised: --enable-sriov is not set");
  if (!vfio_cards.empty())
    plan.notices.push_back("devices " + vfio_cards +
                           " are on vfio-pci (xpud's Vfio list): offered for virtual machines "
                           "only");
  if (!sriov_physical_functions.empty())
    plan.notices.push_back(
        "physical functions " + sriov_physical_functions +
        " are not advertised: their SR-IOV virtual functions are on, which leaves them no compute "
        "of their own" +
        (config.enable_sriov ? "" : " (--enable-sriov advertises the virtual functions)"));

  for (const auto* device : accepted) {
    PluginDevice out;
    out.id = device->uuid;
    out.card_id = device->uuid;
    out.index = device->index;
    out.model = device->model;
    out.virtual_function = device->is_virtual_function;
    if (out.virtual_function) out.device_nodes = device->device_nodes;
    out.numa_node = device->numa_node < 0 ? -1 : device->numa_node;
    out.memory_total_bytes = device->memory_total_bytes;
    for (unsigned peer : device->linked_devices) {
      auto it = id_of_index.find(peer);
      if (it != id_of_index.end() && peer != device->index) out.linked_ids.push_back(it->second);
    }
    std::sort(out.linked_ids.begin(), out.linked_ids.end());
    out.linked_ids.erase(std::unique(out.linked_ids.begin(), out.linked_ids.end()),
                         out.linked_ids.end());
    out.healthy = device->healthy;
    if (!device->healthy)
      out.unhealthy_reason =
          device->health_reason.empty() ? "reported Unhealthy by xpud" : device->health_reason;

    const bool share_this = shared && !out.virtual_function;
    std::string resource;
    std::string socket;
    if (!config.per_model) {
      resource = out.virtual_function ? vf_resource
                 : share_this         ? shared_resource
                                      : config.resource_name;
      socket = out.virtual_function ? kVirtualFunctionSocketName
               : share_this         ? shared_socket
                                    : kDefaultSocketName;
    } else if (out.virtual_function) {
      resource = domain + "/" + model_resource_part(device->model, "-vxpu");
      socket = model_socket_name("kunlunxin-vxpu-", device->model);
    } else if (share_this && by_memory) {
      resource = domain + "/" + model_resource_part(device->model, "-vxpu-memory");
      socket = model_socket_name("kunlunxin-vxpu-memory-", device->model);
    } else if (share_this) {
      resource = domain + "/" + model_resource_part(device->model, "-shared");
      socket = model_socket_name("kunlunxin-xpu-shared-", device->model);
    } else {
      resource = domain + "/" + model_resource_part(device->model);
      socket = socket_name_for_model(device->model);
    }
    if (auto status = validate_extended_resource_name(resource); !status) {
      plan.problems.push_back("device " + xpu::names::device_name(device->index) +
                              " is not advertised: " + status.error());
      continue;
    }
    auto& state = resource_for(resource, socket);
    if (!share_this) {
      state.devices.push_back(std::move(out));
      continue;
    }
    // Replicas carry no links: they would tie replicas of one card to each other, which means
    // nothing for sharing; GetPreferredAllocation of a shared resource spreads instead.
    out.linked_ids.clear();
    state.shared = true;
    state.memory_unit_bytes = unit_bytes;
    if (!by_memory) {
      for (unsigned replica = 0; replica < config.share_replicas; ++replica) {
        PluginDevice copy = out;
        copy.id = out.card_id + std::string(kReplicaSeparator) + std::to_string(replica);
        copy.replica = replica;
        state.devices.push_back(std::move(copy));
      }
      continue;
    }
    const std::uint64_t units = memory_units_of(out.memory_total_bytes, unit_bytes);
    if (auto problem = memory_units_problem(out, units, resource, config.share_memory_unit_mib);
        !problem.empty())
      plan.problems.push_back(std::move(problem));
    const auto advertised =
        static_cast<unsigned>(std::min<std::uint64_t>(units, kMaxMemoryUnitsPerCard));
    for (unsigned unit = 0; unit < advertised; ++unit) {
      PluginDevice copy = out;
      copy.id = out.card_id + std::string(kReplicaSeparator) + std::string(kMemoryUnitMark) +
                std::to_string(unit);
      copy.replica = unit;
      state.devices.push_back(std::move(copy));
    }
  }

  // The functions on vfio-pci, for virtual machines: a resource once xpud lists one.
  const std::string vfio_resource = domain + "/" + std::string(kVfioResource);
  if (!view.vfio_functions.empty() || known_sockets.contains(vfio_resource))
    plan_vfio_devices(view, resource_for(vfio_resource, std::string(kVfioSocketName)),
                      plan.problems);

  for (auto& [name, state] : by_name) plan.resources.push_back(std::move(state));
  return plan;
}

}  // namespace shim
