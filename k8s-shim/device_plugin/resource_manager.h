// What the device plugin advertises, decided from xpud's view alone (pure; no gRPC, no D-Bus).
//
// Resources and their sockets:
//  - default: one resource (`kunlunxin.com/xpu`, or --resource-name) on `kunlunxin-xpu.sock`;
//  - --resource-per-model: one resource per card model, `<domain>/<Model>` where the domain is
//    that of --resource-name (so `kunlunxin.com/R200` by default), on
//    `kunlunxin-xpu-<model in lower case>.sock`. Characters a resource name cannot hold become
//    '-'. Should two models still end up on the same socket name (`R200` and `r200`), the one
//    seen later gets `-<8 hex digits of a hash of its resource name>` appended; a resource keeps
//    its socket for the life of the process, and keeps being served (with no devices) when its
//    cards disappear, so the kubelet sees 0 rather than a vanished plugin.
// Devices: ID = UUID, health from xpud, topology = NUMA node (none when unknown). Once xpud has
// been gone for the grace period every device is Unhealthy; it is Healthy again as soon as xpud
// reports it so.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/xpud_client.h"

namespace shim {

inline constexpr std::string_view kDefaultSocketName = "kunlunxin-xpu.sock";

struct ResourceConfig {
  std::string resource_name{"kunlunxin.com/xpu"};  // validated
  bool per_model = false;
};

struct PluginDevice {
  std::string id;  // UUID
  unsigned index = 0;
  std::string model;
  int numa_node = -1;  // -1: unknown (no topology advertised)
  std::uint64_t memory_total_bytes = 0;
  std::vector<std::string> linked_ids;
  bool healthy = false;
  std::string unhealthy_reason;  // empty while healthy

  bool operator==(const PluginDevice&) const = default;
};

struct ResourceState {
  std::string resource_name;
  std::string socket_name;
  std::vector<PluginDevice> devices;  // ascending index

  bool operator==(const ResourceState&) const = default;
};

struct ResourcePlan {
  std::vector<ResourceState> resources;  // ascending resource name
  // Devices xpud reported that cannot be advertised, each with the reason (for the log).
  std::vector<std::string> problems;
};

// `known_sockets` (resource name -> socket name) are the resources already served: they keep
// their sockets and stay in the plan even without devices. `xpud_lost`: xpud has been gone
// longer than the grace period.
ResourcePlan plan_resources(const ResourceConfig& config, const xpu::DeviceView& view,
                            bool xpud_lost,
                            const std::map<std::string, std::string>& known_sockets);

// Socket name a per-model resource would like (before collisions are resolved).
std::string socket_name_for_model(std::string_view model);

// Why a UUID cannot serve as a Kubernetes device ID, or ok.
xpu::Status validate_device_id(std::string_view id);

}  // namespace shim
