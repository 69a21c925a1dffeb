// Times as the API takes them (metav1.Time): RFC 3339 in UTC, whole seconds.
#pragma once

#include <chrono>
#include <string>

namespace shim::kube {

// "2026-12-04T05:03:54Z"; the fraction of a second is dropped, as metav1.Time's JSON form does.
std::string rfc3339(std::chrono::system_clock::time_point time);

}  // namespace shim::kube
