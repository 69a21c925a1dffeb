// The roles of xpu-k8s-shim: four that serve, and validate, which checks once and exits. Each runs
// until SIGTERM/SIGINT and returns the process exit status, in a program of its own
// (k8s-shim/role_program.h). The three that read cards are handed their parsed flags and the
// process's one CardFeed (k8s-shim/cards/README.md), made by the role's main.cpp: none of them
// reaches xpud's cards another way. token-sync and validate read no cards and parse their own
// arguments (after the role name).
#pragma once

#include <span>
#include <string>

#include "common/stop_signals.h"
#include "k8s-shim/shim_options.h"

namespace shim {

// Declared only: each role's own headers stay out of the others' (token-sync needs no gRPC
// stubs of the exporter's).
class CardFeed;
struct DevicePluginOptions;
namespace dra {
struct DraDriverOptions;
}
namespace exporter {
struct ExporterOptions;
}

int run_device_plugin(const ShimOptions& options, const DevicePluginOptions& plugin,
                      CardFeed& cards, xpu::StopSignals& stop);
int run_exporter(const ShimOptions& options, const exporter::ExporterOptions& flags,
                 CardFeed& cards, xpu::StopSignals& stop);
int run_token_sync(ShimOptions options, std::span<const std::string> args, xpu::StopSignals& stop);
int run_dra_driver(const dra::DraDriverOptions& driver, CardFeed& cards, xpu::StopSignals& stop);
int run_validate(ShimOptions options, std::span<const std::string> args, xpu::StopSignals& stop);

}  // namespace shim
