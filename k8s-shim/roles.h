// The roles of xpu-k8s-shim: four that serve, and validate, which checks once and exits. Each
// parses its own arguments (after the role name), runs until SIGTERM/SIGINT and returns the process
// exit status.
#pragma once

#include <span>
#include <string>

#include "common/stop_signals.h"
#include "k8s-shim/shim_options.h"

namespace shim {

int run_device_plugin(ShimOptions options, std::span<const std::string> args,
                      xpu::StopSignals& stop);
int run_exporter(ShimOptions options, std::span<const std::string> args, xpu::StopSignals& stop);
int run_token_sync(ShimOptions options, std::span<const std::string> args, xpu::StopSignals& stop);
int run_dra_driver(ShimOptions options, std::span<const std::string> args, xpu::StopSignals& stop);
int run_validate(ShimOptions options, std::span<const std::string> args, xpu::StopSignals& stop);

}  // namespace shim
