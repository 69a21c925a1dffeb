// The token-sync role: command line, then the sync loop.
#include <spdlog/spdlog.h>

#include "k8s-shim/roles.h"
#include "k8s-shim/token_sync/token_sync_loop.h"
#include "k8s-shim/token_sync/token_sync_options.h"

namespace shim {

int run_token_sync(ShimOptions options, std::span<const std::string> args, xpu::StopSignals& stop) {
  token_sync::TokenSyncOptions sync = token_sync::parse_token_sync_command_line(options, args);
  token_sync::TokenSyncConfig& config = sync.config;
  config.api_server = token_sync::ApiServerEnvironment::from_process_environment();
  spdlog::info("syncing {} to {} on change and every {} s", config.source_dir.string(),
               config.dest_dir.string(), sync.interval.count());
  return token_sync::run_sync_loop(config, sync.interval, stop);
}

}  // namespace shim
