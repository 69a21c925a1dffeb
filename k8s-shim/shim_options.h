// Options every xpu-k8s-shim role takes, and how a role reads its command line.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include <spdlog/common.h>

#include "common/command_line.h"
#include "common/result.h"

namespace shim {

enum class MemoryUnit { B, KiB, MiB, GiB };

struct ShimOptions {
  std::optional<std::string> bus_address;              // nullopt: system bus
  std::optional<spdlog::level::level_enum> log_level;  // --log-level
  std::optional<int> verbosity;                        // --v (klog style)
  MemoryUnit memory_unit = MemoryUnit::MiB;

  // --log-level wins over --v; info when neither is given.
  spdlog::level::level_enum effective_log_level() const;
};

// Registers --bus-address, --log-level, --v and --memory-unit on `cli`, writing into `options`.
void add_common_options(xpu::CommandLine& cli, ShimOptions& options);

// Registers --xpud-grace-period SECONDS (0..86400): how long xpud may be gone before the role
// treats every card as unhealthy (the role's CardState applies it). Every role that reads cards
// takes it (device plugin, DRA driver, exporter), so that what the scheduler is offered and what
// the metrics say agree on when xpud's last word is too old.
inline constexpr std::chrono::seconds kDefaultXpudGracePeriod{10};
void add_xpud_grace_period_option(xpu::CommandLine& cli, std::chrono::seconds& grace_period);

// An option's handler that stores an absolute path in `target` and refuses anything else.
std::function<xpu::Status(std::string_view)> absolute_path_option(std::string& target);

xpu::Result<MemoryUnit> parse_memory_unit(std::string_view text);
// "32768 MiB" style rendering for logs and node labels; never used in metrics (bytes there).
std::string format_memory(std::uint64_t bytes, MemoryUnit unit);

// Parses a role's arguments with the common options plus the role's own, handles --help
// (prints, exits 0) and errors (one line, exits 2), then sets up logging for the role.
void parse_role_command_line(xpu::CommandLine& cli, ShimOptions& options,
                             std::span<const std::string> args, const char* role);

// A role's whole command line, as every role's *_options.cpp reads it: the role's own options
// (`add`) and the common ones, parsed by parse_role_command_line; then `check` (combinations the
// flags alone cannot check, and what comes from elsewhere), whose error prints one line and
// exits 2.
template <typename RoleOptions>
RoleOptions parse_role_options(ShimOptions& options, std::span<const std::string> args,
                               const char* role, void (*add)(xpu::CommandLine&, RoleOptions&),
                               const std::function<xpu::Status(RoleOptions&)>& check = nullptr) {
  RoleOptions parsed;
  xpu::CommandLine cli(std::string("xpu-k8s-shim ") + role, "[OPTIONS]");
  add(cli, parsed);
  parse_role_command_line(cli, options, args, role);
  if (check)
    if (auto status = check(parsed); !status) xpu::exit_usage_error(cli.program(), status.error());
  return parsed;
}

}  // namespace shim
