#include "xpud/backends/xpuml/process_query.h"

#include <algorithm>
#include <string>

namespace xpud::xpuml {
namespace {

// Room for processes started between the library's answer and our next question.
unsigned with_headroom(unsigned count) {
  const unsigned headroom = std::max(8u, count / 4);
  return std::min(kMaxProcessRecords, count + headroom);
}

}  // namespace

ProcessQueryResult query_processes(const ProcessCall& call, unsigned hint) {
  ProcessQueryResult result;
  unsigned capacity =
      std::max(kInitialProcessCapacity, with_headroom(std::min(hint, kMaxProcessRecords)));
  std::vector<xpumlProcessInfo_t> records;
  for (unsigned attempt = 0; attempt < kProcessQueryAttempts; ++attempt) {
    records.assign(capacity, xpumlProcessInfo_t{});
    unsigned count = capacity;
    result.code = call(&count, records.data());
    if (result.code != XPUML_SUCCESS && result.code != XPUML_ERROR_INSUFFICIENT_SIZE) return result;
    if (count > kMaxProcessRecords) {
      result.implausible = "reported " + std::to_string(count) + " processes";
      return result;
    }
    if (result.code == XPUML_SUCCESS) {
      if (count > capacity) {
        // It claims to have filled more records than it was given room for.
        result.implausible = "reported " + std::to_string(count) + " processes for room for " +
                             std::to_string(capacity);
        return result;
      }
      records.resize(count);
      result.count = count;
      result.records = std::move(records);
      return result;
    }
    result.count = count;
    // INSUFFICIENT_SIZE with a count that fits is the library changing its mind (a process
    // started in between): offer more anyway, so the next question can be answered.
    capacity = with_headroom(std::max(count, capacity));
  }
  return result;  // the count of the last answer, no list
}

}  // namespace xpud::xpuml
