#include "k8s-shim/pod_resources/held_cards_options.h"

#include "k8s-shim/resource_name.h"

namespace shim {

void add_podresources_socket_option(xpu::CommandLine& cli, std::string& socket) {
  cli.add_option("podresources-socket", "PATH",
                 "the kubelet's pod-resources socket (default " +
                     std::string(kDefaultPodResourcesSocket) + ")",
                 [&socket](std::string_view value) -> xpu::Status {
                   if (value.empty()) return xpu::Error{"must not be empty"};
                   socket = std::string(value);
                   return xpu::ok_status();
                 });
}

void add_device_plugin_resource_name_option(xpu::CommandLine& cli, std::string& resource_name,
                                            std::string_view use) {
  cli.add_option("resource-name", "NAME",
                 "the device plugin's --resource-name (default " +
                     std::string(kDefaultResourceName) + "): " + std::string(use),
                 [&resource_name](std::string_view value) -> xpu::Status {
                   if (auto status = validate_extended_resource_name(value); !status) return status;
                   resource_name = std::string(value);
                   return xpu::ok_status();
                 });
}

void add_held_cards_options(xpu::CommandLine& cli, HeldCardsOptions& options) {
  constexpr std::uint64_t kMaxRefreshSeconds = 3600;
  add_podresources_socket_option(cli, options.podresources_socket);
  cli.add_option("held-cards-refresh", "SECONDS",
                 "how often to ask pod-resources which cards pods hold through the other way of "
                 "handing cards out (device plugin or DRA), which are then not offered; 0: never "
                 "(default " +
                     std::to_string(kDefaultHeldCardsRefresh.count()) + ")",
                 [&options](std::string_view value) -> xpu::Status {
                   auto seconds = xpu::parse_uint(value, 0, kMaxRefreshSeconds);
                   if (!seconds) return xpu::Error{seconds.error()};
                   options.refresh = std::chrono::seconds(*seconds);
                   return xpu::ok_status();
                 });
}

}  // namespace shim
