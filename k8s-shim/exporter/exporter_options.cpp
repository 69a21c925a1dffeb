#include "k8s-shim/exporter/exporter_options.h"

namespace shim::exporter {

void add_exporter_options(xpu::CommandLine& cli, ExporterOptions& options) {
  cli.add_option("listen", "HOST:PORT",
                 "address to serve /metrics on: HOST:PORT, [IPV6]:PORT or :PORT (default :9507)",
                 [&options](std::string_view value) -> xpu::Status {
                   auto parsed = parse_listen_address(value);
                   if (!parsed) return xpu::Error{parsed.error()};
                   options.listen = std::move(*parsed);
                   return xpu::ok_status();
                 });
  add_podresources_socket_option(cli, options.podresources_socket);
  // The device plugin's flags, so a deployment passes both roles the same ones: every resource the
  // plugin advertises is in the domain of its --resource-name, and that domain is what the
  // exporter reads, per-model or not.
  add_device_plugin_resource_name_option(cli, options.resource_name,
                                         "pod-resources entries in its domain are read as XPUs");
  cli.add_flag("resource-per-model", &options.resource_per_model,
               "the device plugin's --resource-per-model; accepted for symmetry (per-model names "
               "are in the same domain)");
  cli.add_option("web-config-file", "PATH",
                 "TLS and basic auth in the exporter-toolkit format (tls_server_config, "
                 "basic_auth_users); reloaded when it or the files it names change",
                 [&options](std::string_view value) -> xpu::Status {
                   if (value.empty()) return xpu::Error{"must not be empty"};
                   options.web_config_file = std::string(value);
                   return xpu::ok_status();
                 });
  add_xpud_grace_period_option(cli, options.xpud_grace_period);
}

ExporterOptions parse_exporter_command_line(ShimOptions& options,
                                            std::span<const std::string> args) {
  return parse_role_options<ExporterOptions>(options, args, "exporter", add_exporter_options);
}

}  // namespace shim::exporter
