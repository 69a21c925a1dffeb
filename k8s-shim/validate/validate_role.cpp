// The validate role: run once in a pod that was given cards (the chart's `helm test` pod), it
// prints what it checked, one line each, and exits 0 when every check passed, 1 otherwise.
#include <cstdio>
#include <cstdlib>

#include "k8s-shim/roles.h"
#include "k8s-shim/validate/allocation_check.h"
#include "k8s-shim/validate/validate_options.h"

namespace shim {

int run_validate(ShimOptions options, std::span<const std::string> args, xpu::StopSignals&) {
  const validate::ValidateOptions parsed = validate::parse_validate_command_line(options, args);
  validate::AllocationSeen seen;
  // getenv: the process is single-threaded here, and the value is copied at once.
  if (const char* value = std::getenv("XPU_VISIBLE_DEVICES")) seen.visible_devices = value;
  seen.device_dir = parsed.device_dir;
  seen.expect_cards = parsed.expect_cards;
  const validate::AllocationReport report = validate::check_allocation(seen);
  for (const auto& line : report.lines) std::printf("%s\n", line.c_str());
  std::printf("%s\n", report.passed ? "xpu validation passed" : "xpu validation FAILED");
  std::fflush(stdout);
  return report.passed ? 0 : 1;
}

}  // namespace shim
