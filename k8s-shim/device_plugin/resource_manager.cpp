#include "k8s-shim/device_plugin/resource_manager.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "k8s-shim/device_plugin/resource_name.h"

namespace shim {
namespace {

constexpr std::size_t kMaxDeviceIdLength = 63;  // the kubelet's limit for Device.ID
constexpr std::size_t kMaxModelNameLength = 63;
constexpr std::string_view kLostReason = "xpud has been unreachable for longer than the grace period";

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// The part after '/' in a per-model resource name.
std::string model_resource_part(std::string_view model) {
  std::string part;
  for (char c : model) part += (is_alnum(c) || c == '-' || c == '_' || c == '.') ? c : '-';
  auto first = std::find_if(part.begin(), part.end(), is_alnum);
  auto last = std::find_if(part.rbegin(), part.rend(), is_alnum).base();
  part = first < last ? std::string(first, last) : std::string();
  if (part.size() > kMaxModelNameLength) part.resize(kMaxModelNameLength);
  while (!part.empty() && !is_alnum(part.back())) part.pop_back();
  return part.empty() ? "unknown" : part;
}

std::string fnv1a_hex(std::string_view text) {
  std::uint32_t hash = 2166136261u;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 16777619u;
  }
  char buffer[9];
  std::snprintf(buffer, sizeof buffer, "%08x", hash);
  return buffer;
}

std::string with_suffix(std::string_view socket, std::string_view suffix) {
  std::string_view stem = socket.substr(0, socket.size() - std::string_view(".sock").size());
  return std::string(stem) + "-" + std::string(suffix) + ".sock";
}

}  // namespace

std::string socket_name_for_model(std::string_view model) {
  std::string name = "kunlunxin-xpu-";
  for (char c : model_resource_part(model)) {
    char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    name += (is_alnum(lower) || lower == '-' || lower == '.') ? lower : '-';
  }
  return name + ".sock";
}

xpu::Status validate_device_id(std::string_view id) {
  if (id.empty()) return xpu::Error{"the UUID is empty"};
  if (id.size() > kMaxDeviceIdLength)
    return xpu::Error{"the UUID '" + std::string(id) + "' is longer than " +
                      std::to_string(kMaxDeviceIdLength) + " characters"};
  for (char c : id)
    if (!is_alnum(c) && c != '-' && c != '_' && c != '.' && c != ':')
      return xpu::Error{"the UUID '" + std::string(id) + "' contains a character other than "
                        "letters, digits, '-', '_', '.' and ':'"};
  return xpu::ok_status();
}

ResourcePlan plan_resources(const ResourceConfig& config, const xpu::DeviceView& view,
                            bool xpud_lost,
                            const std::map<std::string, std::string>& known_sockets) {
  ResourcePlan plan;
  std::map<std::string, ResourceState> by_name;
  std::set<std::string> sockets_taken;
  for (const auto& [resource, socket] : known_sockets) {
    by_name.emplace(resource, ResourceState{resource, socket, {}});
    sockets_taken.insert(socket);
  }
  auto resource_for = [&](const std::string& resource, std::string socket) -> ResourceState& {
    auto it = by_name.find(resource);
    if (it != by_name.end()) return it->second;
    if (sockets_taken.contains(socket)) socket = with_suffix(socket, fnv1a_hex(resource));
    sockets_taken.insert(socket);
    return by_name.emplace(resource, ResourceState{resource, socket, {}}).first->second;
  };
  if (!config.per_model) resource_for(config.resource_name, std::string(kDefaultSocketName));

  // xpud is outside input: keep only devices that can be advertised without ambiguity.
  std::vector<const xpu::DeviceInfo*> accepted;
  std::set<std::string> ids;
  std::map<unsigned, std::string> id_of_index;
  std::vector<const xpu::DeviceInfo*> ordered;
  for (const auto& device : view.devices) ordered.push_back(&device);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto* a, const auto* b) { return a->index < b->index; });
  for (const auto* device : ordered) {
    const std::string where = "device xpu" + std::to_string(device->index);
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
    accepted.push_back(device);
  }

  const std::string domain(resource_domain(config.resource_name));
  for (const auto* device : accepted) {
    PluginDevice out;
    out.id = device->uuid;
    out.index = device->index;
    out.model = device->model;
    out.numa_node = device->numa_node < 0 ? -1 : device->numa_node;
    out.memory_total_bytes = device->memory_total_bytes;
    for (unsigned peer : device->linked_devices) {
      auto it = id_of_index.find(peer);
      if (it != id_of_index.end() && peer != device->index) out.linked_ids.push_back(it->second);
    }
    std::sort(out.linked_ids.begin(), out.linked_ids.end());
    out.linked_ids.erase(std::unique(out.linked_ids.begin(), out.linked_ids.end()),
                         out.linked_ids.end());
    out.healthy = device->healthy && !xpud_lost;
    if (xpud_lost)
      out.unhealthy_reason = kLostReason;
    else if (!device->healthy)
      out.unhealthy_reason = device->health_reason.empty() ? "reported Unhealthy by xpud"
                                                           : device->health_reason;

    if (!config.per_model) {
      resource_for(config.resource_name, std::string(kDefaultSocketName)).devices.push_back(out);
      continue;
    }
    std::string resource = domain + "/" + model_resource_part(device->model);
    if (auto status = validate_extended_resource_name(resource); !status) {
      plan.problems.push_back("device xpu" + std::to_string(device->index) +
                              " is not advertised: " + status.error());
      continue;
    }
    resource_for(resource, socket_name_for_model(device->model)).devices.push_back(out);
  }

  for (auto& [name, state] : by_name) plan.resources.push_back(std::move(state));
  return plan;
}

}  // namespace shim
