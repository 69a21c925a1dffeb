// The token-sync role: command line, then the sync loop.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <system_error>

#include <spdlog/spdlog.h>

#include "k8s-shim/roles.h"
#include "k8s-shim/token_sync/token_sync_loop.h"

namespace shim {
namespace {

constexpr std::uint64_t kMaxIntervalSeconds = 24 * 3600;

xpu::Status parse_dir(std::string_view value, std::filesystem::path& target) {
  if (value.empty()) return xpu::Error{"must not be empty"};
  for (char c : value)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return xpu::Error{"contains a control character"};
  std::error_code error;
  auto absolute = std::filesystem::absolute(std::filesystem::path(value), error);
  if (error)
    return xpu::Error{"cannot make '" + std::string(value) + "' absolute: " + error.message()};
  target = absolute.lexically_normal();
  // "/a/b/" normalizes to "/a/b/"; the kubeconfig reads better without the trailing slash.
  if (target.has_relative_path() && !target.has_filename()) target = target.parent_path();
  return xpu::ok_status();
}

}  // namespace

int run_token_sync(ShimOptions options, std::span<const std::string> args, xpu::StopSignals& stop) {
  token_sync::TokenSyncConfig config;
  std::chrono::seconds interval{60};
  xpu::CommandLine cli("xpu-k8s-shim token-sync", "[OPTIONS]");
  cli.add_option("source-dir", "DIR",
                 std::string("service-account volume to copy from (default ") +
                     token_sync::kDefaultSourceDir + ")",
                 [&config](std::string_view value) { return parse_dir(value, config.source_dir); });
  cli.add_option("dest-dir", "DIR",
                 std::string("directory for token, ca.crt, namespace, kubeconfig (default ") +
                     token_sync::kDefaultDestDir + ")",
                 [&config](std::string_view value) { return parse_dir(value, config.dest_dir); });
  cli.add_option("interval", "SECONDS",
                 "re-sync at least this often, besides on change (default 60)",
                 [&interval](std::string_view value) -> xpu::Status {
                   auto seconds = xpu::parse_uint(value, 1, kMaxIntervalSeconds);
                   if (!seconds) return xpu::Error{seconds.error()};
                   interval = std::chrono::seconds(*seconds);
                   return xpu::ok_status();
                 });
  parse_role_command_line(cli, options, args, "token-sync");
  if (config.source_dir == config.dest_dir)
    xpu::exit_usage_error(cli.program(), "--source-dir and --dest-dir name the same directory");

  config.api_server = token_sync::ApiServerEnvironment::from_process_environment();
  spdlog::info("syncing {} to {} on change and every {} s", config.source_dir.string(),
               config.dest_dir.string(), interval.count());
  return token_sync::run_sync_loop(config, interval, stop);
}

}  // namespace shim
