#include "k8s-shim/dra/metadata_attributes.h"

#include <string>

#include "k8s-shim/dra/dra_names.h"
#include "k8s-shim/dra/slices/slice_content.h"

namespace shim::dra {

DeviceAttributes metadata_attributes(const xpu::DeviceView& view, std::string_view device,
                                     std::optional<std::int64_t> granted_memory) {
  const std::optional<NamedDevice> named = named_device(device);
  if (!named && !device.starts_with(kVfioDevicePrefix)) return {};
  // The slice's own rules make the values (one spelling of every attribute); a shareable device
  // is published with its card's attributes, so the card's are looked up. A function on
  // vfio-pci is published under its own name.
  const std::string published = named ? device_name(named->index) : std::string(device);
  for (const ResourceSliceSpec& slice :
       desired_slices(view, "metadata", 0, nullptr, TaintPolicy{}, SharePolicy{}))
    for (const SliceDevice& candidate : slice.devices) {
      if (candidate.name != published) continue;
      DeviceAttributes attributes = candidate.attributes;
      attributes.erase(std::string(slice_attribute::kHealthy));
      if (granted_memory) {
        attributes[std::string(kMetadataMemoryAttribute)] = *granted_memory;
      } else if (auto memory = candidate.capacity.find(std::string(slice_attribute::kMemory));
                 memory != candidate.capacity.end()) {
        attributes[std::string(kMetadataMemoryAttribute)] = memory->second;
      }
      return attributes;
    }
  return {};
}

}  // namespace shim::dra
