// xpud: the host daemon that owns the XPU driver and serves devices, health and metrics on D-Bus.
#include <cstdio>
#include <filesystem>

#include "common/command_line.h"
#include "common/logging.h"
#include "common/stop_signals.h"
#include "xpud/daemon.h"

namespace {

constexpr const char* kProgram = "xpud";

int run(const std::vector<std::string>& args) {
  xpud::DaemonOptions options;
  xpu::HelpAndVersion flags;
  bool check_config = false;
  xpu::CommandLine cli(kProgram, "[OPTIONS]");
  cli.add_option("config", "FILE",
                 "configuration file (default /etc/xpud/xpud.conf, plus FILE.d/*.conf)",
                 [&](std::string_view value) -> xpu::Status {
                   if (value.empty()) return xpu::Error{"must not be empty"};
                   options.config_path = std::string(value);
                   options.config_path_given = true;
                   return xpu::ok_status();
                 });
  xpu::add_bus_address_option(cli, options.bus_address,
                              "serve on the bus at ADDR instead of the system bus");
  cli.add_flag("session", &options.session_bus, "serve on the session bus (demos)");
  cli.add_option(
      "backend", "NAME", "auto|xpuml|sysfs|sim (overrides the config file)",
      [&](std::string_view value) -> xpu::Status {
        if (value != "auto" && value != "xpuml" && value != "sysfs" && value != "sim")
          return xpu::Error{"'" + std::string(value) + "' is not one of auto, xpuml, sysfs, sim"};
        options.backend = std::string(value);
        return xpu::ok_status();
      });
  xpu::add_log_level_option(cli, options.log_level,
                            "error|warn|info|debug|trace (overrides the config file)");
  cli.add_flag("check-config", &check_config, "validate the configuration and exit");
  xpu::add_version_flag(cli, flags);
  xpu::add_help_flag(cli, flags);
  xpu::parse_program_command_line(cli, args, flags, xpu::Positionals::kRefused);
  if (check_config) {
    auto config = xpud::load_effective_config(options);
    if (!config) {
      std::fprintf(stderr, "%s: %s\n", kProgram, config.error().c_str());
      return 1;
    }
    // Without the main file the checked configuration is the defaults (plus drop-ins): say so,
    // rather than vouch for a file that is not there.
    std::error_code ec;
    std::string origin;
    if (!std::filesystem::exists(options.config_path, ec)) {
      origin = "not found, defaults apply";
      auto dropins = xpud::config_dropins(options.config_path);
      if (dropins && !dropins->empty())
        origin += " with " + std::to_string(dropins->size()) + " drop-in(s) from " +
                  options.config_path.string() + ".d";
      origin += "; ";
    }
    std::printf("%s: %sconfiguration OK (backend %s, interval %lld ms)\n",
                options.config_path.c_str(), origin.c_str(), config->backend.c_str(),
                static_cast<long long>(config->interval.count()));
    return 0;
  }
  // Before any thread starts, so all of them inherit the blocked signals.
  xpu::StopSignals signals(/*include_sighup=*/true);
  return xpud::run_daemon(options, signals);
}

}  // namespace

int main(int argc, char** argv) {
  return xpu::run_main(kProgram, argc, argv, run);
}
