// The fake's xpumlDeviceGetComputeRunningProcesses follows NVML's sizing protocol as the header
// documents it, with 128-byte records: with too little room it writes nothing and asks for more;
// with enough it fills exactly the records there are. A canary record after the room the caller
// offers proves it never writes past it (what a library writing 32-byte-declared records four
// times over did to xpud's stack).
#include <dlfcn.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include <gtest/gtest.h>

#include "xpud/backends/xpuml/xpuml_api.h"

namespace {

template <typename Fn>
Fn symbol(void* library, const char* name) {
  return reinterpret_cast<Fn>(dlsym(library, name));
}

xpumlProcessInfo_t canary() {
  xpumlProcessInfo_t record;
  std::memset(&record, 0xa5, sizeof record);
  return record;
}

bool is_canary(const xpumlProcessInfo_t& record) {
  const auto expected = canary();
  return std::memcmp(&record, &expected, sizeof record) == 0;
}

class FakeXpumlProcesses : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/fake-xpuml-processes-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    std::ofstream(dir_ / "scenario.txt") << "devices 2\ndevice 0\nprocesses 5\n";
    ASSERT_EQ(setenv("XPUML_FAKE_SCRIPT", (dir_ / "scenario.txt").c_str(), 1), 0);
    library_ = dlopen(XPUML_FAKE_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library_, nullptr) << dlerror();
    auto init = symbol<decltype(&xpumlInit)>(library_, "xpumlInit");
    auto handle_by_index =
        symbol<decltype(&xpumlDeviceGetHandleByIndex)>(library_, "xpumlDeviceGetHandleByIndex");
    processes_ = symbol<decltype(&xpumlDeviceGetComputeRunningProcesses)>(
        library_, "xpumlDeviceGetComputeRunningProcesses");
    ASSERT_NE(processes_, nullptr);
    ASSERT_EQ(init(), XPUML_SUCCESS);
    ASSERT_EQ(handle_by_index(0, &busy_), XPUML_SUCCESS);
    ASSERT_EQ(handle_by_index(1, &idle_), XPUML_SUCCESS);
  }
  void TearDown() override {
    if (library_ != nullptr) symbol<decltype(&xpumlShutdown)>(library_, "xpumlShutdown")();
    unsetenv("XPUML_FAKE_SCRIPT");
    std::filesystem::remove_all(dir_);
  }

  std::filesystem::path dir_;
  void* library_ = nullptr;
  decltype(&xpumlDeviceGetComputeRunningProcesses) processes_ = nullptr;
  xpumlDevice_t busy_{};
  xpumlDevice_t idle_{};
};

TEST_F(FakeXpumlProcesses, TooLittleRoomWritesNothingAndAsksForTheCount) {
  // Room for 3, a canary in the fourth slot.
  std::vector<xpumlProcessInfo_t> records(4, canary());
  unsigned count = 3;
  EXPECT_EQ(processes_(busy_, &count, records.data()), XPUML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 5u);
  for (const auto& record : records) EXPECT_TRUE(is_canary(record));
}

TEST_F(FakeXpumlProcesses, EnoughRoomFillsExactlyTheRecordsThereAre) {
  // Room for 7, a canary in the eighth slot: five records written, the rest untouched.
  std::vector<xpumlProcessInfo_t> records(8, canary());
  unsigned count = 7;
  ASSERT_EQ(processes_(busy_, &count, records.data()), XPUML_SUCCESS);
  ASSERT_EQ(count, 5u);
  for (unsigned i = 0; i < 5; ++i) {
    EXPECT_EQ(records[i].pid, 1000 + i);
    EXPECT_EQ(records[i].usedGlobalMemory, std::uint64_t{1} << 30);
    EXPECT_EQ(records[i].reserved_u32, 0u);  // the whole 128-byte record is written
    EXPECT_EQ(records[i].reserved[11], 0u);
  }
  for (unsigned i = 5; i < 8; ++i) EXPECT_TRUE(is_canary(records[i])) << i;
}

TEST_F(FakeXpumlProcesses, ExactRoomAndNoProcesses) {
  std::vector<xpumlProcessInfo_t> records(6, canary());
  unsigned count = 5;
  ASSERT_EQ(processes_(busy_, &count, records.data()), XPUML_SUCCESS);
  EXPECT_EQ(count, 5u);
  EXPECT_TRUE(is_canary(records[5]));

  // The header's way to ask for the count alone: room 0, no array.
  count = 0;
  EXPECT_EQ(processes_(busy_, &count, nullptr), XPUML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 5u);
  count = 0;
  EXPECT_EQ(processes_(idle_, &count, nullptr), XPUML_SUCCESS);
  EXPECT_EQ(count, 0u);
}

}  // namespace
