// Kubernetes extended resource names (`kunlunxin.com/xpu`): what the kubelet accepts in Register,
// checked here first so a bad --resource-name stops start-up with a clear message instead of a
// plugin the kubelet silently rejects.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/result.h"

namespace shim {

inline constexpr std::string_view kDefaultResourceName = "kunlunxin.com/xpu";

// The kubelet's limit for a device plugin's Device.ID.
inline constexpr std::size_t kMaxDeviceIdLength = 63;

// The rules the kubelet applies: `domain/name`, the domain a DNS subdomain outside
// kubernetes.io, the name at most 63 characters of [A-Za-z0-9-_.] starting and ending
// alphanumeric, and "requests." + the whole name still a valid qualified name (quota form).
xpu::Status validate_extended_resource_name(std::string_view name);

// "kunlunxin.com" of "kunlunxin.com/xpu"; call only on a validated name.
std::string_view resource_domain(std::string_view name);

// Shared mode advertises each card several times, as device IDs `<card UUID>::<replica>`, or in
// its memory form as `<card UUID>::m<unit>` (device_plugin/resource_plan.h); the exporter reads
// them back from pod-resources.
inline constexpr std::string_view kReplicaSeparator = "::";
inline constexpr std::string_view kMemoryUnitMark = "m";  // after the separator

// The card a device ID names: the UUID before a `::<replica number>` or `::m<unit number>`
// suffix, else the whole ID.
std::string_view card_uuid_of_device_id(std::string_view device_id);

// Why a UUID cannot serve as a Kubernetes device ID, or ok (the device plugin advertises cards by
// UUID; the DRA driver reads them back from pod-resources).
xpu::Status validate_device_id(std::string_view id);

}  // namespace shim
