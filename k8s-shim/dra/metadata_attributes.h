// What the device metadata file (kubelet/device_metadata.h) says about a prepared device: the
// attributes this node's ResourceSlice publishes for it, so that a framework in the container
// reads the same facts the scheduler matched on (model, uuid, index, pciBusId, numaNode,
// driverVersion, linkGroup, physicalFunction for a VF, and Kubernetes' standard pciBusID,
// pcieRoot and numaNode), plus what the claim got of the device's memory. The upstream helper
// asks drivers for "all attributes that are published in the ResourceSlice"
// (k8s.io/dynamic-resource-allocation v0.37.2 kubeletplugin/draplugin.go, DeviceMetadata).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/xpud_types.h"
#include "k8s-shim/dra/kubelet/claim_preparation.h"

namespace shim::dra {

// The metadata's own attribute: the bytes of memory the claim got of the device (int): the
// device's memory for a card or a VF (its capacity in the slice), a share's grant for a share.
inline constexpr std::string_view kMetadataMemoryAttribute = "memory";

// The attributes of `device` ("xpu-<i>", its shareable "xpu-<i>-shared", which carries the card's
// attributes, or a VF's) as the slice made from `view` publishes them, without `healthy` (the
// file is written once, at prepare; the pod's status and the claim's status.devices carry the
// health as it changes), and with kMetadataMemoryAttribute: `granted_memory` when given (a share),
// else the device's memory capacity. Empty for a device the slice does not publish.
DeviceAttributes metadata_attributes(const xpu::DeviceView& view, std::string_view device,
                                     std::optional<std::int64_t> granted_memory);

}  // namespace shim::dra
