// The device-plugin role's own flags (besides the options every shim role takes).
#pragma once

#include <chrono>
#include <string>

#include "common/command_line.h"
#include "k8s-shim/device_plugin/resource_name.h"

namespace shim {

inline constexpr std::string_view kDefaultPluginDir = "/var/lib/kubelet/device-plugins/";
inline constexpr std::string_view kKubeletSocketName = "kubelet.sock";

struct DevicePluginOptions {
  std::string plugin_dir{kDefaultPluginDir};
  std::string resource_name{kDefaultResourceName};
  bool resource_per_model = false;
  std::chrono::seconds xpud_grace_period{10};
};

// --plugin-dir DIR, --resource-name NAME (validated), --resource-per-model,
// --xpud-grace-period SECONDS (0..86400).
void add_device_plugin_options(xpu::CommandLine& cli, DevicePluginOptions& options);

}  // namespace shim
