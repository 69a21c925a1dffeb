#include "k8s-shim/token_sync/token_sync_options.h"

#include <filesystem>
#include <system_error>

namespace shim::token_sync {
namespace {

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

void add_token_sync_options(xpu::CommandLine& cli, TokenSyncOptions& options) {
  cli.add_option(
      "source-dir", "DIR",
      std::string("service-account volume to copy from (default ") + kDefaultSourceDir + ")",
      [&options](std::string_view value) { return parse_dir(value, options.config.source_dir); });
  cli.add_option(
      "dest-dir", "DIR",
      std::string("directory for token, ca.crt, namespace, kubeconfig (default ") +
          kDefaultDestDir + ")",
      [&options](std::string_view value) { return parse_dir(value, options.config.dest_dir); });
  cli.add_option(
      "dest-parent-dir", "DIR",
      "the host's directory holding --dest-dir, mounted apart (read-only), where its owner, mode "
      "and entry are checked (default: --dest-dir's parent)",
      [&options](std::string_view value) {
        return parse_dir(value, options.config.dest_parent_dir);
      });
  cli.add_option("interval", "SECONDS",
                 "re-sync at least this often, besides on change (default 60)",
                 [&options](std::string_view value) -> xpu::Status {
                   auto seconds = xpu::parse_uint(value, 1, kMaxInterval.count());
                   if (!seconds) return xpu::Error{seconds.error()};
                   options.interval = std::chrono::seconds(*seconds);
                   return xpu::ok_status();
                 });
}

xpu::Status check_token_sync_options(const TokenSyncOptions& options) {
  if (options.config.source_dir == options.config.dest_dir)
    return xpu::Error{"--source-dir and --dest-dir name the same directory"};
  return xpu::ok_status();
}

TokenSyncOptions parse_token_sync_command_line(ShimOptions& options,
                                               std::span<const std::string> args) {
  return parse_role_options<TokenSyncOptions>(options, args, "token-sync", add_token_sync_options,
                                              check_token_sync_options);
}

}  // namespace shim::token_sync
