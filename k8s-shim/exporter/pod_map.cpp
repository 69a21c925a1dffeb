#include "k8s-shim/exporter/pod_map.h"

#include <spdlog/spdlog.h>

#include "k8s-shim/resource_name.h"

namespace shim::exporter {

PodMap PodMapBuilder::update(const v1::ListPodResourcesResponse& response) {
  const std::uint64_t reply = ++replies_;
  std::map<Claim, std::uint64_t> seen;
  for (const auto& pod : response.pod_resources()) {
    for (const auto& container : pod.containers()) {
      ContainerRef holder{pod.namespace_(), pod.name(), container.name()};
      if (holder.pod_namespace.empty() || holder.pod.empty() || holder.container.empty()) {
        spdlog::debug("pod-resources: ignoring a container without namespace, pod or name");
        continue;
      }
      for (const auto& devices : container.devices()) {
        if (!std::string_view(devices.resource_name()).starts_with(resource_prefix_)) continue;
        for (const auto& id : devices.device_ids()) {
          if (id.empty()) continue;
          Claim claim{std::string(card_uuid_of_device_id(id)), holder};
          auto known = first_seen_.find(claim);
          seen.emplace(claim, known == first_seen_.end() ? reply : known->second);
        }
      }
    }
  }
  first_seen_ = seen;

  PodMap owners;
  several_holders_.clear();
  std::map<std::string, std::uint64_t> owner_since;
  for (const auto& [claim, since] : seen) {  // ascending by (uuid, holder)
    const auto& [uuid, holder] = claim;
    auto current = owner_since.find(uuid);
    if (current == owner_since.end()) {
      owners.emplace(uuid, holder);
      owner_since.emplace(uuid, since);
      continue;
    }
    several_holders_.insert(uuid);
    spdlog::debug("pod-resources: device {} is listed for {}/{}/{} and {}/{}/{}", uuid,
                  owners[uuid].pod_namespace, owners[uuid].pod, owners[uuid].container,
                  holder.pod_namespace, holder.pod, holder.container);
    if (since > current->second) {
      owners[uuid] = holder;
      current->second = since;
    }
  }
  return owners;
}

}  // namespace shim::exporter
