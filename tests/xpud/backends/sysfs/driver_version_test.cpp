#include "xpud/backends/sysfs/driver_version.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/fakes/sysfs/fake_sysfs_tree.h"
#include "tests/xpud/backends/captured_log.h"

namespace xpud::sysfs {
namespace {

using ::testing::HasSubstr;

TEST(SysfsDriverVersionParse, AcceptsThreeOrFourNumericComponents) {
  EXPECT_EQ(parse_driver_version("4.0.11\n"), "4.0.11");
  EXPECT_EQ(parse_driver_version("5.0.21.16\n"), "5.0.21.16");
  EXPECT_EQ(parse_driver_version("10.20.30"), "10.20.30");
}

TEST(SysfsDriverVersionParse, RejectsEverythingElse) {
  for (const char* text :
       {"", "\n", "4", "4.0", "4.0.11.2.1", "4..11", ".4.0.11", "4.0.11.", "v4.0.11", "4.0.11-rc1",
        "4.0.x", " 4.0.11", "4.0.1234567890", "4.0.11 (built by someone)", "\xff\xfe\xfd"})
    EXPECT_EQ(parse_driver_version(text), std::nullopt) << '"' << text << '"';
}

class SysfsDriverVersionFile : public ::testing::Test {
 protected:
  xpu::fakes::FakeSysfsTree tree_;
};

TEST_F(SysfsDriverVersionFile, EmptyWhenTheDriverSaysNothing) {
  EXPECT_EQ(read_driver_version(tree_.root()), "");
}

TEST_F(SysfsDriverVersionFile, ProcVersionComesFirst) {
  tree_.set_proc_driver_version("5.0.21.16\n");
  tree_.set_module_version("4.0.11\n");
  EXPECT_EQ(read_driver_version(tree_.root()), "5.0.21.16");
}

TEST_F(SysfsDriverVersionFile, ModuleVersionWhenProcIsMissing) {
  tree_.set_module_version("4.0.11\n");
  EXPECT_EQ(read_driver_version(tree_.root()), "4.0.11");
}

TEST_F(SysfsDriverVersionFile, ModuleVersionWhenProcIsGarbageAndTheGarbageIsLogged) {
  xpud::test::CapturedLog log;
  tree_.set_proc_driver_version("kunlun driver, built today\n");
  tree_.set_module_version("4.0.11\n");
  EXPECT_EQ(read_driver_version(tree_.root()), "4.0.11");
  EXPECT_THAT(log.text(), HasSubstr("ignoring " + (tree_.root() / "proc/xpu/version").string() +
                                    ": malformed"));
}

TEST_F(SysfsDriverVersionFile, EmptyWhenBothAreUnusable) {
  tree_.set_proc_driver_version(std::string(10000, '1'));
  tree_.set_module_version(std::string("4.0\0.11", 7));
  EXPECT_EQ(read_driver_version(tree_.root()), "");
}

}  // namespace
}  // namespace xpud::sysfs
