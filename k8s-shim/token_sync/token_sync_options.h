// The token-sync role's own flags (besides the options every shim role takes).
#pragma once

#include <chrono>
#include <span>
#include <string>

#include "common/command_line.h"
#include "k8s-shim/shim_options.h"
#include "k8s-shim/token_sync/token_syncer.h"

namespace shim::token_sync {

inline constexpr std::chrono::seconds kMaxInterval{24 * 3600};

struct TokenSyncOptions {
  TokenSyncConfig config;  // --source-dir and --dest-dir, absolute and normalised
  std::chrono::seconds interval{60};
};

// --source-dir DIR, --dest-dir DIR (made absolute; no control characters),
// --interval SECONDS (1..86400).
void add_token_sync_options(xpu::CommandLine& cli, TokenSyncOptions& options);

// Combinations the flags alone cannot check: the two directories must differ.
xpu::Status check_token_sync_options(const TokenSyncOptions& options);

// The role's whole command line: bad flags, values or combinations print one line and exit 2.
TokenSyncOptions parse_token_sync_command_line(ShimOptions& options,
                                               std::span<const std::string> args);

}  // namespace shim::token_sync
