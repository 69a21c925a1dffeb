#include "k8s-shim/shim_options.h"

#include <cstdio>
#include <cstdlib>

#include "common/logging.h"

namespace shim {

spdlog::level::level_enum ShimOptions::effective_log_level() const {
  if (log_level) return *log_level;
  if (verbosity) return xpu::level_from_verbosity(*verbosity);
  return spdlog::level::info;
}

std::function<xpu::Status(std::string_view)> absolute_path_option(std::string& target) {
  return [&target](std::string_view value) -> xpu::Status {
    if (value.empty() || value.front() != '/') return xpu::Error{"must be an absolute path"};
    target = std::string(value);
    return xpu::ok_status();
  };
}

void add_xpud_grace_period_option(xpu::CommandLine& cli, std::chrono::seconds& grace_period) {
  constexpr std::uint64_t kMaxGraceSeconds = 86400;
  cli.add_option("xpud-grace-period", "SECONDS",
                 "how long xpud may be gone before every card turns unhealthy (default " +
                     std::to_string(kDefaultXpudGracePeriod.count()) + ")",
                 [&grace_period](std::string_view value) -> xpu::Status {
                   auto seconds = xpu::parse_uint(value, 0, kMaxGraceSeconds);
                   if (!seconds) return xpu::Error{seconds.error()};
                   grace_period = std::chrono::seconds(*seconds);
                   return xpu::ok_status();
                 });
}

xpu::Result<MemoryUnit> parse_memory_unit(std::string_view text) {
  if (text == "B") return MemoryUnit::B;
  if (text == "KiB") return MemoryUnit::KiB;
  if (text == "MiB") return MemoryUnit::MiB;
  if (text == "GiB") return MemoryUnit::GiB;
  return xpu::Error{"'" + std::string(text) + "' is not one of B, KiB, MiB, GiB"};
}

std::string format_memory(std::uint64_t bytes, MemoryUnit unit) {
  switch (unit) {
    case MemoryUnit::B:
      return std::to_string(bytes) + " B";
    case MemoryUnit::KiB:
      return std::to_string(bytes >> 10) + " KiB";
    case MemoryUnit::MiB:
      return std::to_string(bytes >> 20) + " MiB";
    case MemoryUnit::GiB:
      return std::to_string(bytes >> 30) + " GiB";
  }
  return std::to_string(bytes) + " B";
}

void add_common_options(xpu::CommandLine& cli, ShimOptions& options) {
  xpu::add_bus_address_option(cli, options.bus_address,
                              "D-Bus address of the bus xpud serves on (default: system bus)");
  xpu::add_log_level_option(cli, options.log_level, "error|warn|info|debug|trace (wins over --v)");
  cli.add_option("v", "N", "klog-style verbosity: 0-1 warn, 2-3 info, 4 debug, 5+ trace",
                 [&options](std::string_view value) -> xpu::Status {
                   auto n = xpu::parse_int(value, 0, 100);
                   if (!n) return xpu::Error{n.error()};
                   options.verbosity = static_cast<int>(*n);
                   return xpu::ok_status();
                 });
  cli.add_option("memory-unit", "UNIT",
                 "B|KiB|MiB|GiB for card memory in logs and labels (default MiB)",
                 [&options](std::string_view value) -> xpu::Status {
                   auto unit = parse_memory_unit(value);
                   if (!unit) return xpu::Error{unit.error()};
                   options.memory_unit = *unit;
                   return xpu::ok_status();
                 });
}

void parse_role_command_line(xpu::CommandLine& cli, ShimOptions& options,
                             std::span<const std::string> args, const char* role) {
  xpu::HelpAndVersion flags;
  xpu::add_help_flag(cli, flags);
  add_common_options(cli, options);
  auto rest = cli.parse(args);
  if (!rest) xpu::exit_usage_error(cli.program(), rest.error());
  if (flags.help) {
    std::fputs(cli.help().c_str(), stdout);
    std::exit(0);
  }
  if (!rest->empty())
    xpu::exit_usage_error(cli.program(), "unexpected argument '" + rest->front() + "'");
  xpu::setup_logging(std::string("xpu-k8s-shim/") + role, options.effective_log_level(),
                     xpu::LogTarget::Stderr);
}

}  // namespace shim
