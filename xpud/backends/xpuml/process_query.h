// xpumlDeviceGetComputeRunningProcesses with NVML's sizing protocol: the caller offers a capacity;
// with more processes than that the library fills nothing, returns INSUFFICIENT_SIZE and sets the
// count it needs; the caller asks again with room. Processes come and go between the two calls,
// so the buffer gets some headroom and the question is asked a bounded number of times.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "xpud/backends/xpuml/xpuml_api.h"

namespace xpud::xpuml {

// A count above this is garbage (an all-ones word), not processes: far above any real card.
inline constexpr unsigned kMaxProcessRecords = 65'536;
// The first capacity offered when nothing is known about the card yet.
inline constexpr unsigned kInitialProcessCapacity = 16;
// Questions asked before giving up on a list that keeps growing faster than we ask.
inline constexpr unsigned kProcessQueryAttempts = 4;

// One call of the library function: (count in: capacity, out: count; records).
using ProcessCall = std::function<xpumlReturn_t(unsigned* count, xpumlProcessInfo_t* records)>;

struct ProcessQueryResult {
  xpumlReturn_t code = XPUML_SUCCESS;  // the last call's, when it is neither of the two below
  // Set when the library answered: the number of processes (also when the list could not be had).
  std::optional<unsigned> count;
  std::optional<std::vector<xpumlProcessInfo_t>> records;  // exactly `count` of them
  // Why an answer was dropped as garbage (a count beyond kMaxProcessRecords, or more records
  // than the capacity offered); empty otherwise.
  std::string implausible;
};

// Asks with a capacity of `hint` plus headroom (at least kInitialProcessCapacity), grows a heap
// buffer to the count the library asks for, and asks again, at most kProcessQueryAttempts times.
ProcessQueryResult query_processes(const ProcessCall& call, unsigned hint);

}  // namespace xpud::xpuml
