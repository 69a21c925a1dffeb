// The main() of a role's own program (k8s-shim/<role>/main.cpp, installed in
// libexec/xpu-k8s-shim/<role>). Each role is a program of its own so that its process maps,
// relocates and touches only its own code: the roles share gRPC, protobuf and Abseil, linked in
// statically, and in one executable every role paid in RSS for the pages of all five.
//
// The dispatcher `xpu-k8s-shim` runs a role's program with its own arguments unchanged,
// `[OPTIONS] ROLE [ROLE OPTIONS]`, so the program reads the whole command line again the same
// way (k8s-shim/shim_command_line.h) and refuses a role other than its own.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "common/stop_signals.h"
#include "k8s-shim/shim_options.h"

namespace shim {

// A role's body: parses the role's own arguments (after the role's name) next to the common
// options already read, and runs the role until it stops; returns the exit status.
using RoleBody =
    std::function<int(ShimOptions& options, std::span<const std::string> args, xpu::StopSignals&)>;

// Sets up the stop signals first thing, reads the command line, then runs `body`. An exception
// that escapes is reported as "xpu-k8s-shim: fatal: what", exit status 1.
int run_role_program(std::string_view role, int argc, char** argv, const RoleBody& body);

}  // namespace shim
