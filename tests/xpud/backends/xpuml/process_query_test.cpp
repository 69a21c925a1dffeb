// NVML's sizing protocol for xpumlDeviceGetComputeRunningProcesses (process_query.h) against
// stand-in calls that behave as the header documents, and against broken ones.
#include "xpud/backends/xpuml/process_query.h"

#include <gtest/gtest.h>

namespace xpud::xpuml {
namespace {

// A library call with `processes` processes (pids 1000, 1001, ...) that also records the room
// it was offered each time.
struct Library {
  unsigned processes = 0;
  std::vector<unsigned> offered;

  ProcessCall call() {
    return [this](unsigned* count, xpumlProcessInfo_t* records) {
      offered.push_back(*count);
      if (*count < processes) {
        *count = processes;
        return XPUML_ERROR_INSUFFICIENT_SIZE;
      }
      for (unsigned i = 0; i < processes; ++i) {
        records[i] = xpumlProcessInfo_t{};
        records[i].pid = 1000 + i;
        records[i].usedGlobalMemory = i;
      }
      *count = processes;
      return XPUML_SUCCESS;
    };
  }
};

TEST(ProcessQuery, AHundredProcessesAreAllListed) {
  Library library{100, {}};
  auto result = query_processes(library.call(), 0);
  ASSERT_EQ(result.count, 100u);
  ASSERT_TRUE(result.records);
  ASSERT_EQ(result.records->size(), 100u);
  for (unsigned i = 0; i < 100; ++i) EXPECT_EQ((*result.records)[i].pid, 1000 + i);
  // The first question with the small default, the second with room for all and headroom.
  ASSERT_EQ(library.offered.size(), 2u);
  EXPECT_EQ(library.offered[0], kInitialProcessCapacity);
  EXPECT_GT(library.offered[1], 100u);
}

TEST(ProcessQuery, TheLastCountSeenSavesTheSecondQuestion) {
  Library library{100, {}};
  auto result = query_processes(library.call(), 100);
  EXPECT_EQ(result.count, 100u);
  EXPECT_EQ(library.offered.size(), 1u);
}

TEST(ProcessQuery, NoProcesses) {
  Library library{0, {}};
  auto result = query_processes(library.call(), 0);
  EXPECT_EQ(result.count, 0u);
  ASSERT_TRUE(result.records);
  EXPECT_TRUE(result.records->empty());
}

TEST(ProcessQuery, FarMoreProcessesThanAnyFixedCap) {
  Library library{5000, {}};
  auto result = query_processes(library.call(), 0);
  EXPECT_EQ(result.count, 5000u);
  ASSERT_TRUE(result.records);
  EXPECT_EQ(result.records->size(), 5000u);
}

TEST(ProcessQuery, AListThatKeepsGrowingGivesTheCountOnly) {
  unsigned processes = 10;
  unsigned calls = 0;
  auto result = query_processes(
      [&](unsigned* count, xpumlProcessInfo_t*) {
        ++calls;
        processes = *count + 100;  // always more than offered
        *count = processes;
        return XPUML_ERROR_INSUFFICIENT_SIZE;
      },
      0);
  EXPECT_EQ(calls, kProcessQueryAttempts);
  EXPECT_EQ(result.count, processes);
  EXPECT_FALSE(result.records);
  EXPECT_TRUE(result.implausible.empty());
}

TEST(ProcessQuery, GarbageCountsAreDropped) {
  auto huge = query_processes(
      [](unsigned* count, xpumlProcessInfo_t*) {
        *count = 0xffffffffu;
        return XPUML_ERROR_INSUFFICIENT_SIZE;
      },
      0);
  EXPECT_FALSE(huge.count);
  EXPECT_FALSE(huge.implausible.empty());

  // Success with more records than the room offered: nothing from it can be trusted.
  auto overfilled = query_processes(
      [](unsigned* count, xpumlProcessInfo_t*) {
        *count += 1;
        return XPUML_SUCCESS;
      },
      0);
  EXPECT_FALSE(overfilled.count);
  EXPECT_FALSE(overfilled.records);
  EXPECT_FALSE(overfilled.implausible.empty());
}

TEST(ProcessQuery, ErrorsAreReturned) {
  auto result =
      query_processes([](unsigned*, xpumlProcessInfo_t*) { return XPUML_ERROR_XPU_IS_LOST; }, 0);
  EXPECT_EQ(result.code, XPUML_ERROR_XPU_IS_LOST);
  EXPECT_FALSE(result.count);
}

}  // namespace
}  // namespace xpud::xpuml
