#include "k8s-shim/pod_resources/held_cards.h"

#include <limits>

#include "common/command_line.h"
#include "common/names.h"
#include "common/pci_address.h"
#include "k8s-shim/dra/dra_names.h"
#include "k8s-shim/printable.h"
#include "k8s-shim/resource_name.h"

namespace shim {
namespace {

// Collects the ignored entries, naming the first few and counting the rest, so a reply full of
// garbage costs a few log lines, not one per entry.
class IgnoredEntries {
 public:
  explicit IgnoredEntries(std::vector<std::string>& out) : out_(out) {}
  IgnoredEntries(const IgnoredEntries&) = delete;
  IgnoredEntries& operator=(const IgnoredEntries&) = delete;
  ~IgnoredEntries() {
    if (more_ > 0) out_.push_back("and " + std::to_string(more_) + " more entries like these");
  }

  void add(std::string what) {
    if (out_.size() < kMaxIgnoredNamed)
      out_.push_back(std::move(what));
    else
      ++more_;
  }

 private:
  std::vector<std::string>& out_;
  std::size_t more_ = 0;
};

std::string quoted(std::string_view text) {
  return "\"" + printable_excerpt(text) + "\"";
}

std::string container_label(const v1::PodResources& pod, const v1::ContainerResources& container) {
  return "container " + quoted(container.name()) + " of pod " + quoted(pod.namespace_()) + "/" +
         quoted(pod.name());
}

}  // namespace

HeldCardsReading cards_held_by_device_plugin(const v1::ListPodResourcesResponse& reply,
                                             std::string_view resource_domain) {
  HeldCardsReading reading;
  IgnoredEntries ignored(reading.ignored);
  const std::string prefix = std::string(resource_domain) + "/";
  // The VFIO resource's name after its domain ("xpu_vfio"), whose IDs are PCI addresses.
  const std::string_view vfio_resource =
      xpu::names::vfio::kResourceName.substr(xpu::names::vfio::kResourceName.find('/') + 1);
  for (const auto& pod : reply.pod_resources()) {
    for (const auto& container : pod.containers()) {
      for (const auto& devices : container.devices()) {
        if (!std::string_view(devices.resource_name()).starts_with(prefix)) continue;
        if (std::string_view(devices.resource_name()).substr(prefix.size()) == vfio_resource) {
          for (const auto& id : devices.device_ids()) {
            if (xpu::pci_address::is_extended_bdf(id))
              reading.held.vfio_functions.insert(id);
            else
              ignored.add(container_label(pod, container) + " holds " +
                          quoted(devices.resource_name()) + " device " + quoted(id) +
                          ", which is no PCI address");
          }
          continue;
        }
        for (const auto& id : devices.device_ids()) {
          const std::string_view uuid = card_uuid_of_device_id(id);
          if (auto valid = validate_device_id(uuid); !valid) {
            ignored.add(container_label(pod, container) + " holds " +
                        quoted(devices.resource_name()) + " device " + quoted(id) +
                        ", which names no card");
            continue;
          }
          reading.held.uuids.emplace(uuid);
        }
      }
    }
  }
  return reading;
}

std::string card_cdi_name_of_dra_device(const v1::ClaimResource& resource) {
  const std::string prefix = xpu::names::cdi::qualified_name("");
  const auto& cdi_devices = resource.cdi_devices();
  for (int i = cdi_devices.size() - 1; i >= 0; --i) {
    std::string_view name = cdi_devices[i].name();
    if (!name.starts_with(prefix)) continue;
    name.remove_prefix(prefix.size());
    return std::string(name);
  }
  return {};
}

std::string vfio_function_of_dra_device(const v1::ClaimResource& resource) {
  const std::string prefix = xpu::names::vfio::cdi_qualified_name("");
  for (const auto& cdi : resource.cdi_devices())
    if (std::string_view(cdi.name()).starts_with(prefix)) return cdi.name().substr(prefix.size());
  return {};
}

HeldCardsReading cards_held_through_dra(const v1::ListPodResourcesResponse& reply) {
  HeldCardsReading reading;
  IgnoredEntries ignored(reading.ignored);
  for (const auto& pod : reply.pod_resources()) {
    for (const auto& container : pod.containers()) {
      for (const auto& dynamic : container.dynamic_resources()) {
        for (const auto& resource : dynamic.claim_resources()) {
          if (resource.driver_name() != dra::kDriverName) continue;
          const std::string where = "claim " + quoted(dynamic.claim_namespace()) + "/" +
                                    quoted(dynamic.claim_name()) + " of " +
                                    container_label(pod, container);
          if (std::string_view(resource.device_name()).starts_with(dra::kVfioDevicePrefix)) {
            const std::string address = vfio_function_of_dra_device(resource);
            if (xpu::pci_address::is_extended_bdf(address))
              reading.held.vfio_functions.insert(address);
            else
              ignored.add(where + " holds the device " + quoted(resource.device_name()) +
                          " with no function of xpud's VFIO CDI spec");
            continue;
          }
          const std::optional<dra::NamedDevice> named = dra::named_device(resource.device_name());
          if (named) reading.held.indices.insert(named->index);
          const std::string cdi = card_cdi_name_of_dra_device(resource);
          if (xpu::names::cdi::is_uuid_name(cdi))
            reading.held.uuids.insert(cdi);
          else if (auto index = xpu::parse_uint(cdi, 0, std::numeric_limits<unsigned>::max()))
            reading.held.indices.insert(static_cast<unsigned>(*index));
          else if (!cdi.empty())
            ignored.add(where + " lists the CDI device " +
                        quoted(xpu::names::cdi::qualified_name(cdi)) + ", which names no card");
          if (!named)
            ignored.add(where + " holds the device " + quoted(resource.device_name()) + " of " +
                        std::string(dra::kDriverName) + ", which is no device name of this driver");
        }
      }
    }
  }
  return reading;
}

xpu::DeviceView without_held_cards(const xpu::DeviceView& view, const HeldCards& held,
                                   std::vector<std::string>* left_out) {
  xpu::DeviceView offered = view;
  if (held.empty()) return offered;
  offered.devices.clear();
  for (const auto& device : view.devices) {
    if (!held.holds(device)) {
      offered.devices.push_back(device);
      continue;
    }
    if (left_out) left_out->push_back(xpu::names::device_name(device.index));
  }
  std::erase_if(offered.vfio_functions, [&](const xpu::VfioFunctionInfo& function) {
    const bool is_held = held.vfio_functions.contains(function.pci_bus_id);
    if (is_held && left_out) left_out->push_back(function.pci_bus_id);
    return is_held;
  });
  return offered;
}

std::vector<xpu::DeviceInfo> with_held_cards_unhealthy(std::vector<xpu::DeviceInfo> cards,
                                                       const HeldCards& held,
                                                       std::string_view reason) {
  for (auto& card : cards) {
    if (!held.holds(card)) continue;
    card.healthy = false;
    card.health_reason = std::string(reason);
  }
  return cards;
}

}  // namespace shim
