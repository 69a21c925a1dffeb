#include "k8s-shim/device_plugin/device_plugin_options.h"

namespace shim {
namespace {
constexpr std::uint64_t kMaxGraceSeconds = 86400;
}

void add_device_plugin_options(xpu::CommandLine& cli, DevicePluginOptions& options) {
  cli.add_option("plugin-dir", "DIR",
                 "kubelet device-plugin directory (default " + std::string(kDefaultPluginDir) + ")",
                 [&options](std::string_view value) -> xpu::Status {
                   if (value.empty()) return xpu::Error{"must not be empty"};
                   options.plugin_dir = std::string(value);
                   return xpu::ok_status();
                 });
  cli.add_option("resource-name", "NAME",
                 "extended resource to advertise (default " + std::string(kDefaultResourceName) +
                     "); with --resource-per-model its domain prefixes each model",
                 [&options](std::string_view value) -> xpu::Status {
                   if (auto status = validate_extended_resource_name(value); !status) return status;
                   options.resource_name = std::string(value);
                   return xpu::ok_status();
                 });
  cli.add_flag("resource-per-model", &options.resource_per_model,
               "advertise one resource per card model (kunlunxin.com/R200, ...)");
  cli.add_option("xpud-grace-period", "SECONDS",
                 "how long xpud may be gone before every device turns Unhealthy (default 10)",
                 [&options](std::string_view value) -> xpu::Status {
                   auto seconds = xpu::parse_uint(value, 0, kMaxGraceSeconds);
                   if (!seconds) return xpu::Error{seconds.error()};
                   options.xpud_grace_period = std::chrono::seconds(*seconds);
                   return xpu::ok_status();
                 });
}

}  // namespace shim
