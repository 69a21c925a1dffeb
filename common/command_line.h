// A small GNU-style option parser shared by xpud, xpuctl and xpu-k8s-shim, so every binary
// treats --help, --version and bad flags the same way (bad flag or value: one line, exit 2).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/common.h>

#include "common/result.h"

namespace xpu {

class CommandLine {
 public:
  CommandLine(std::string program, std::string synopsis);

  // --name (no value).
  void add_flag(std::string name, bool* target, std::string help);
  // --name VALUE or --name=VALUE. The handler validates the value and returns an error message
  // to reject it.
  void add_option(std::string name, std::string metavar, std::string help,
                  std::function<Status(std::string_view)> handler);
  // Convenience: stores the value as given.
  void add_option(std::string name, std::string metavar, std::string help, std::string* target);

  // Parses args (without argv[0]). Stops at the first positional argument when
  // stop_at_positional is set (for subcommands: the rest belongs to the subcommand), otherwise
  // collects positionals. "--" ends option parsing.
  Result<std::vector<std::string>> parse(std::span<const std::string> args,
                                         bool stop_at_positional = false) const;

  std::string help() const;
  const std::string& program() const { return program_; }

 private:
  struct Option {
    std::string name;
    std::string metavar;  // empty for flags
    std::string help;
    bool* flag = nullptr;
    std::function<Status(std::string_view)> handler;
  };
  const Option* find(std::string_view name) const;

  std::string program_;
  std::string synopsis_;
  std::vector<Option> options_;
};

std::vector<std::string> to_args(int argc, char** argv);  // argv[1..]

// A program's main(): runs `body` with argv[1..]; an exception that escapes it is reported as
// "program: fatal: what" with exit status 1 instead of an abort.
int run_main(std::string_view program, int argc, char** argv,
             const std::function<int(const std::vector<std::string>&)>& body);

// Options that several binaries share, spelled and validated once.
// --bus-address ADDR: a D-Bus address instead of the system bus.
void add_bus_address_option(CommandLine& cli, std::optional<std::string>& target, std::string help);
// --log-level LEVEL: error|warn|info|debug|trace.
void add_log_level_option(CommandLine& cli, std::optional<spdlog::level::level_enum>& target,
                          std::string help);

// Prints "program: message" and a pointer to --help on stderr and exits with status 2.
[[noreturn]] void exit_usage_error(std::string_view program, std::string_view message);

// --help and --version, which every program takes; each registered where the call stands, so a
// program's help lists them where it always has.
struct HelpAndVersion {
  bool help = false;
  bool version = false;
};
void add_help_flag(CommandLine& cli, HelpAndVersion& flags);
void add_version_flag(CommandLine& cli, HelpAndVersion& flags);

// What a program's positional arguments are to the parse.
enum class Positionals {
  kRefused,      // none: the first is a usage error
  kCollected,    // any number, wherever they stand
  kStopAtFirst,  // the first and all after it, unparsed (a subcommand's)
};

// The start of every program's run(): parses `args` (a bad flag, or a positional argument when
// they are refused, exits 2 as exit_usage_error does), then answers --help (the help, then
// `help_epilogue`) or --version ("program VERSION") on stdout and exits 0. Returns the
// positional arguments.
std::vector<std::string> parse_program_command_line(const CommandLine& cli,
                                                    std::span<const std::string> args,
                                                    const HelpAndVersion& flags,
                                                    Positionals positionals,
                                                    std::string_view help_epilogue = {});

// Strict number parsing for flags and config values: the whole text must be a number in range.
Result<std::uint64_t> parse_uint(std::string_view text, std::uint64_t min, std::uint64_t max);
Result<std::int64_t> parse_int(std::string_view text, std::int64_t min, std::int64_t max);

}  // namespace xpu
