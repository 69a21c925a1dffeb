#include "k8s-shim/exporter/pod_map.h"

#include <spdlog/spdlog.h>

#include "common/names.h"
#include "k8s-shim/dra/dra_names.h"
#include "k8s-shim/pod_resources/held_cards.h"
#include "k8s-shim/resource_name.h"

namespace shim::exporter {
namespace {

// The card a DRA device stands for, from the CDI names the driver prepared it with: xpud's
// per-card name kunlunxin.com/xpu=<uuid> (held_cards.h). A card named by index only (a UUID that
// cannot be a CDI name) yields nothing.
std::string card_uuid_of_dra_device(const v1::ClaimResource& resource) {
  std::string name = card_cdi_name_of_dra_device(resource);
  return xpu::names::cdi::is_uuid_name(name) ? name : std::string();
}

}  // namespace

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
      // Cards granted through Dynamic Resource Allocation (ResourceClaims of our DRA driver).
      for (const auto& dynamic : container.dynamic_resources()) {
        for (const auto& resource : dynamic.claim_resources()) {
          if (resource.driver_name() != shim::dra::kDriverName) continue;
          std::string uuid = card_uuid_of_dra_device(resource);
          if (uuid.empty()) {
            spdlog::debug(
                "pod-resources: DRA device {} of claim {}/{} has no card UUID among its CDI names",
                resource.device_name(), dynamic.claim_namespace(), dynamic.claim_name());
            continue;
          }
          Claim claim{std::move(uuid), holder};
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
