// xpud's lifetime: configuration, backend, sampler, bus objects and the main loop that ties them
// to systemd (readiness, status, watchdog, reload on SIGHUP, clean stop on SIGTERM).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <spdlog/common.h>

#include "common/result.h"
#include "common/stop_signals.h"
#include "xpud/config.h"

namespace xpud {

struct DaemonOptions {
  std::filesystem::path config_path = kDefaultConfigPath;
  bool config_path_given = false;          // then the file must exist
  std::optional<std::string> bus_address;  // private bus instead of the system bus
  bool session_bus = false;
  std::optional<std::string> backend;                  // overrides [daemon] backend
  std::optional<spdlog::level::level_enum> log_level;  // overrides [daemon] log_level
};

// The configuration with command-line overrides applied.
xpu::Result<Config> load_effective_config(const DaemonOptions& options);

// Runs until SIGTERM/SIGINT; returns the exit status.
int run_daemon(const DaemonOptions& options, xpu::StopSignals& signals);

}  // namespace xpud
