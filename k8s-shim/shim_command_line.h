// The front of every xpu-k8s-shim command line, `xpu-k8s-shim [OPTIONS] ROLE [ROLE OPTIONS]`:
// read by the dispatcher (k8s-shim/main.cpp), which needs the role to know which program to run,
// and again by that role's program, which the dispatcher runs with the same arguments. One reading
// for both, so that --help, --version and a bad common option or role answer the same either way.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "k8s-shim/shim_options.h"

namespace shim {

inline constexpr const char* kProgram = "xpu-k8s-shim";

// Whether `name` is one of the roles (device-plugin, exporter, token-sync, dra-driver, validate).
bool is_role(std::string_view name);

// Parses the common options before the role into `options` and answers --help and --version
// (prints, exits 0); a bad option, or a missing or unknown role, prints one line and exits 2.
// Returns the role's name followed by its own arguments.
std::vector<std::string> parse_shim_command_line(ShimOptions& options,
                                                 std::span<const std::string> args);

}  // namespace shim
