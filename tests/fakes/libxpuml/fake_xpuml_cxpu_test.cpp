// The fake's cXPU instance calls follow the header: ids of 1 to XPUML_CXPU_INST_ID_LEN (12)
// characters, a limit per memory type (global 0, L3 1), no limit until one is set; and answer
// the cases the header leaves open (an id that exists, one that does not) as its README says.
#include <dlfcn.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "xpud/backends/xpuml/xpuml_api.h"

namespace {

template <typename Fn>
Fn symbol(void* library, const char* name) {
  return reinterpret_cast<Fn>(dlsym(library, name));
}

class FakeXpumlCxpu : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/fake-xpuml-cxpu-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    std::ofstream(dir_ / "scenario.txt") << "devices 2\n";
    ASSERT_EQ(setenv("XPUML_FAKE_SCRIPT", (dir_ / "scenario.txt").c_str(), 1), 0);
    ASSERT_EQ(setenv("XPUML_FAKE_CXPU_STATE", (dir_ / "state").c_str(), 1), 0);
    library_ = dlopen(XPUML_FAKE_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library_, nullptr) << dlerror();
    create_ =
        symbol<decltype(&xpumlDeviceCreateCxpuInstance)>(library_, "xpumlDeviceCreateCxpuInstance");
    limit_ = symbol<decltype(&xpumlDeviceSetCxpuInstanceMemoryLimit)>(
        library_, "xpumlDeviceSetCxpuInstanceMemoryLimit");
    destroy_ = symbol<decltype(&xpumlDeviceDestroyCxpuInstance)>(library_,
                                                                 "xpumlDeviceDestroyCxpuInstance");
    ASSERT_NE(create_, nullptr);
    ASSERT_NE(limit_, nullptr);
    ASSERT_NE(destroy_, nullptr);
    ASSERT_EQ(symbol<decltype(&xpumlInit)>(library_, "xpumlInit")(), XPUML_SUCCESS);
    auto handle_by_index =
        symbol<decltype(&xpumlDeviceGetHandleByIndex)>(library_, "xpumlDeviceGetHandleByIndex");
    ASSERT_EQ(handle_by_index(0, &card0_), XPUML_SUCCESS);
    ASSERT_EQ(handle_by_index(1, &card1_), XPUML_SUCCESS);
  }
  void TearDown() override {
    if (library_ != nullptr) symbol<decltype(&xpumlShutdown)>(library_, "xpumlShutdown")();
    unsetenv("XPUML_FAKE_SCRIPT");
    unsetenv("XPUML_FAKE_CXPU_STATE");
    std::filesystem::remove_all(dir_);
  }

  std::string state() const {
    std::ifstream file(dir_ / "state");
    return std::string(std::istreambuf_iterator<char>(file), {});
  }

  std::filesystem::path dir_;
  void* library_ = nullptr;
  decltype(&xpumlDeviceCreateCxpuInstance) create_ = nullptr;
  decltype(&xpumlDeviceSetCxpuInstanceMemoryLimit) limit_ = nullptr;
  decltype(&xpumlDeviceDestroyCxpuInstance) destroy_ = nullptr;
  xpumlDevice_t card0_{};
  xpumlDevice_t card1_{};
};

TEST_F(FakeXpumlCxpu, IdsOfOneToTwelveCharacters) {
  char twelve[] = "0123456789ab";
  char thirteen[] = "0123456789abc";
  char empty[] = "";
  EXPECT_EQ(create_(card0_, twelve), XPUML_SUCCESS);
  EXPECT_EQ(create_(card0_, thirteen), XPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(create_(card0_, empty), XPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(create_(card0_, nullptr), XPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(state(), "00000000:3B:00.0 0123456789ab 18446744073709551615 18446744073709551615\n");
}

TEST_F(FakeXpumlCxpu, LimitsPerMemoryTypeOnInstancesThatExist) {
  char id[] = "abc";
  EXPECT_EQ(limit_(card1_, id, XPUML_MEMORY_LOCATION_GLOBAL_MEMORY, 1024), XPUML_ERROR_NOT_FOUND);
  ASSERT_EQ(create_(card1_, id), XPUML_SUCCESS);
  EXPECT_EQ(create_(card1_, id), XPUML_ERROR_IN_USE);
  EXPECT_EQ(limit_(card1_, id, XPUML_MEMORY_LOCATION_COUNT, 1024), XPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(limit_(card1_, id, XPUML_MEMORY_LOCATION_GLOBAL_MEMORY, 1024), XPUML_SUCCESS);
  EXPECT_EQ(limit_(card1_, id, XPUML_MEMORY_LOCATION_L3_MEMORY, 64), XPUML_SUCCESS);
  EXPECT_EQ(state(), "00000000:3C:00.0 abc 1024 64\n");
  // The same id on another card is another instance.
  ASSERT_EQ(create_(card0_, id), XPUML_SUCCESS);
  EXPECT_EQ(destroy_(card1_, id), XPUML_SUCCESS);
  EXPECT_EQ(destroy_(card1_, id), XPUML_ERROR_NOT_FOUND);
  EXPECT_EQ(state(), "00000000:3B:00.0 abc 18446744073709551615 18446744073709551615\n");
}

}  // namespace
