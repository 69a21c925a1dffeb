#include "xpud/sampling/health_monitor.h"

#include "common/names.h"

namespace xpud {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Unhealthy with `reason`, keeping the reason already shown when it is the same cause.
void set_unhealthy(HealthState& state, std::string reason, std::string_view kind) {
  if (!state.healthy && reason_kind(state.reason) == reason_kind(reason)) return;
  state.healthy = false;
  state.reason = std::move(reason);
  state.reason_kind = kind;
}

}  // namespace

std::string reason_kind(std::string_view reason) {
  constexpr std::string_view kMilliseconds = " ms";
  std::string kind;
  kind.reserve(reason.size());
  for (std::size_t i = 0; i < reason.size();) {
    if (!is_digit(reason[i])) {
      kind += reason[i++];
      continue;
    }
    std::size_t end = i;
    while (end < reason.size() && is_digit(reason[end])) ++end;
    const bool duration = reason.substr(end, kMilliseconds.size()) == kMilliseconds;
    kind += duration ? std::string_view("N") : reason.substr(i, end - i);
    i = end;
  }
  return kind;
}

const HealthState& HealthMonitor::update(const std::string& uuid, const DeviceReading& reading) {
  HealthState& state = states_[uuid];
  if (reading.fault) {
    state.consecutive_failures = 0;
    set_unhealthy(state, *reading.fault, xpu::names::reason_kind::kDriverFault);
  } else if (reading.read_error) {
    ++state.consecutive_failures;
    if (state.consecutive_failures >= failure_threshold_)
      set_unhealthy(state, "reads keep failing: " + *reading.read_error,
                    xpu::names::reason_kind::kReadFailures);
  } else {
    state = HealthState{};
  }
  return state;
}

const HealthState& HealthMonitor::add_finding(const std::string& uuid, std::string reason,
                                              std::string_view kind) {
  HealthState& state = states_[uuid];
  if (state.healthy) set_unhealthy(state, std::move(reason), kind);
  return state;
}

}  // namespace xpud
