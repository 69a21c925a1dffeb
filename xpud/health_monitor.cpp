#include "xpud/health_monitor.h"

namespace xpud {

const HealthState& HealthMonitor::update(const std::string& uuid, const DeviceReading& reading) {
  HealthState& state = states_[uuid];
  if (reading.fault) {
    state.healthy = false;
    state.reason = *reading.fault;
    state.consecutive_failures = 0;
  } else if (reading.read_error) {
    ++state.consecutive_failures;
    if (state.consecutive_failures >= failure_threshold_) {
      state.healthy = false;
      state.reason = std::to_string(state.consecutive_failures) +
                     " consecutive failed reads, last: " + *reading.read_error;
    }
  } else {
    state = HealthState{};
  }
  return state;
}

}  // namespace xpud
