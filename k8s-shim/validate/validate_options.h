// The validate role's own flags (besides the options every shim role takes).
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>

#include "common/command_line.h"
#include "k8s-shim/shim_options.h"

namespace shim::validate {

struct ValidateOptions {
  std::optional<unsigned> expect_cards;       // --expect-cards N
  std::filesystem::path device_dir = "/dev";  // --device-dir DIR (tests point it elsewhere)
};

// --expect-cards N (1..256), --device-dir DIR (absolute).
void add_validate_options(xpu::CommandLine& cli, ValidateOptions& options);

// The role's whole command line: bad flags or values print one line and exit 2.
ValidateOptions parse_validate_command_line(ShimOptions& options,
                                            std::span<const std::string> args);

}  // namespace shim::validate
