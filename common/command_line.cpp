#include "common/command_line.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "common/logging.h"

namespace xpu {

CommandLine::CommandLine(std::string program, std::string synopsis)
    : program_(std::move(program)), synopsis_(std::move(synopsis)) {}

void CommandLine::add_flag(std::string name, bool* target, std::string help) {
  options_.push_back(Option{std::move(name), "", std::move(help), target, {}});
}

void CommandLine::add_option(std::string name, std::string metavar, std::string help,
                             std::function<Status(std::string_view)> handler) {
  options_.push_back(
      Option{std::move(name), std::move(metavar), std::move(help), nullptr, std::move(handler)});
}

void CommandLine::add_option(std::string name, std::string metavar, std::string help,
                             std::string* target) {
  add_option(std::move(name), std::move(metavar), std::move(help),
             [target](std::string_view value) -> Status {
               *target = std::string(value);
               return ok_status();
             });
}

const CommandLine::Option* CommandLine::find(std::string_view name) const {
  for (const auto& option : options_)
    if (option.name == name) return &option;
  return nullptr;
}

Result<std::vector<std::string>> CommandLine::parse(std::span<const std::string> args,
                                                    bool stop_at_positional) const {
  std::vector<std::string> positionals;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      positionals.insert(positionals.end(), args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (arg.size() < 3 || arg.rfind("--", 0) != 0) {
      if (arg.size() > 1 && arg[0] == '-') return Error{"unknown option '" + arg + "'"};
      if (stop_at_positional) {
        positionals.insert(positionals.end(), args.begin() + static_cast<long>(i), args.end());
        break;
      }
      positionals.push_back(arg);
      continue;
    }
    std::string_view body = std::string_view(arg).substr(2);
    std::optional<std::string_view> inline_value;
    if (auto eq = body.find('='); eq != std::string_view::npos) {
      inline_value = body.substr(eq + 1);
      body = body.substr(0, eq);
    }
    const Option* option = find(body);
    if (option == nullptr) return Error{"unknown option '--" + std::string(body) + "'"};
    if (option->flag != nullptr) {
      if (inline_value) return Error{"option '--" + option->name + "' takes no value"};
      *option->flag = true;
      continue;
    }
    std::string_view value;
    if (inline_value) {
      value = *inline_value;
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return Error{"option '--" + option->name + "' needs a value (" + option->metavar + ")"};
    }
    if (Status status = option->handler(value); !status)
      return Error{"--" + option->name + ": " + status.error()};
  }
  return positionals;
}

std::string CommandLine::help() const {
  std::ostringstream out;
  out << "Usage: " << program_ << " " << synopsis_ << "\n\nOptions:\n";
  for (const auto& option : options_) {
    std::string left = "  --" + option.name;
    if (!option.metavar.empty()) left += " " + option.metavar;
    out << left;
    out << std::string(left.size() < 32 ? 32 - left.size() : 2, ' ') << option.help << "\n";
  }
  return out.str();
}

std::vector<std::string> to_args(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return args;
}

int run_main(std::string_view program, int argc, char** argv,
             const std::function<int(const std::vector<std::string>&)>& body) {
  try {
    return body(to_args(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%.*s: fatal: %s\n", static_cast<int>(program.size()), program.data(),
                 e.what());
    return 1;
  }
}

void add_bus_address_option(CommandLine& cli, std::optional<std::string>& target,
                            std::string help) {
  cli.add_option("bus-address", "ADDR", std::move(help),
                 [&target](std::string_view value) -> Status {
                   if (value.empty()) return Error{"must not be empty"};
                   target = std::string(value);
                   return ok_status();
                 });
}

void add_log_level_option(CommandLine& cli, std::optional<spdlog::level::level_enum>& target,
                          std::string help) {
  cli.add_option("log-level", "LEVEL", std::move(help),
                 [&target](std::string_view value) -> Status {
                   auto level = parse_log_level(value);
                   if (!level)
                     return Error{"'" + std::string(value) +
                                  "' is not one of error, warn, info, debug, trace"};
                   target = *level;
                   return ok_status();
                 });
}

void exit_usage_error(std::string_view program, std::string_view message) {
  std::fprintf(stderr, "%.*s: %.*s (try --help)\n", static_cast<int>(program.size()),
               program.data(), static_cast<int>(message.size()), message.data());
  std::exit(2);
}

void add_help_flag(CommandLine& cli, HelpAndVersion& flags) {
  cli.add_flag("help", &flags.help, "show this help and exit");
}

void add_version_flag(CommandLine& cli, HelpAndVersion& flags) {
  cli.add_flag("version", &flags.version, "print the version and exit");
}

std::vector<std::string> parse_program_command_line(const CommandLine& cli,
                                                    std::span<const std::string> args,
                                                    const HelpAndVersion& flags,
                                                    Positionals positionals,
                                                    std::string_view help_epilogue) {
  auto rest = cli.parse(args, /*stop_at_positional=*/positionals == Positionals::kStopAtFirst);
  if (!rest) exit_usage_error(cli.program(), rest.error());
  if (positionals == Positionals::kRefused && !rest->empty())
    exit_usage_error(cli.program(), "unexpected argument '" + rest->front() + "'");
  if (flags.help) {
    std::fputs(cli.help().c_str(), stdout);
    // An empty view's data() may be null, which fwrite must not be given (UBSan says so).
    if (!help_epilogue.empty()) std::fwrite(help_epilogue.data(), 1, help_epilogue.size(), stdout);
    std::exit(0);
  }
  if (flags.version) {
    std::printf("%s %s\n", cli.program().c_str(), XPU_VERSION);
    std::exit(0);
  }
  return std::move(*rest);
}

Result<std::uint64_t> parse_uint(std::string_view text, std::uint64_t min, std::uint64_t max) {
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    return Error{"'" + std::string(text) + "' is not a non-negative integer"};
  if (value < min || value > max)
    return Error{"'" + std::string(text) + "' is out of range [" + std::to_string(min) + ", " +
                 std::to_string(max) + "]"};
  return value;
}

Result<std::int64_t> parse_int(std::string_view text, std::int64_t min, std::int64_t max) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    return Error{"'" + std::string(text) + "' is not an integer"};
  if (value < min || value > max)
    return Error{"'" + std::string(text) + "' is out of range [" + std::to_string(min) + ", " +
                 std::to_string(max) + "]"};
  return value;
}

}  // namespace xpu
