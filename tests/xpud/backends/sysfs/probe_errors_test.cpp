#include "xpud/backends/sysfs/probe_errors.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/fakes/sysfs/fake_sysfs_tree.h"
#include "tests/xpud/backends/captured_log.h"

namespace xpud::sysfs {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Key;

TEST(SysfsProbeErrors, ParsesEveryFieldAndKeepsSpacesInTheErrorText) {
  auto failures = parse_probe_errors(
      "0000:3B:00.0 02K00123 3 xpu3 -110 Connection timed out\n"
      "0000:5e:00.0 unknown 4 xpu4 5 Input/output error\n",
      "probe_error");
  ASSERT_THAT(failures, ElementsAre(Key("0000:3b:00.0"), Key("0000:5e:00.0")));
  const ProbeFailure& first = failures.at("0000:3b:00.0");
  EXPECT_EQ(first.serial, "02K00123");
  EXPECT_EQ(first.driver_index, 3u);
  EXPECT_EQ(first.name, "xpu3");
  EXPECT_EQ(first.error_number, -110);
  EXPECT_EQ(first.error_text, "Connection timed out");
  EXPECT_EQ(first.reason(),
            "driver failed to probe 0000:3b:00.0: Connection timed out (errno -110)");
}

TEST(SysfsProbeErrors, ReasonWithoutErrorText) {
  auto failures = parse_probe_errors("0000:3b:00.0 sn 0 xpu0 19\n", "probe_error");
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures.at("0000:3b:00.0").reason(),
            "driver failed to probe 0000:3b:00.0: (errno 19)");
}

TEST(SysfsProbeErrors, SkipsMalformedLinesAndNamesThem) {
  xpud::test::CapturedLog log;
  auto failures = parse_probe_errors(
      "not a bdf sn 0 xpu0 19 No such device\n"
      "0000:3b:00.0 sn zero xpu0 19 No such device\n"
      "0000:3b:00.0 sn 0 xpu0 nineteen No such device\n"
      "0000:3b:00.0 sn 0\n"
      "\n"
      "0000:5e:00.0 sn 1 xpu1 19 Bad \xc3\x28 bytes\n"
      "0000:af:00.0 sn 2 xpu2 12 Out of memory",
      "/proc/xpu/probe_error");
  EXPECT_THAT(failures, ElementsAre(Key("0000:af:00.0")));
  for (int line : {1, 2, 3, 4, 6})
    EXPECT_THAT(log.text(),
                HasSubstr("ignoring /proc/xpu/probe_error line " + std::to_string(line) + ":"));
  EXPECT_THAT(log.text(), ::testing::Not(HasSubstr("line 5:")));
}

TEST(SysfsProbeErrors, ReadsTheFileAndIgnoresAnOversizedOne) {
  xpu::fakes::FakeSysfsTree tree;
  auto path = tree.root() / "proc/xpu/probe_error";
  EXPECT_TRUE(read_probe_errors(path).empty());

  tree.set_probe_errors("0000:3b:00.0 sn 0 xpu0 19 No such device\n");
  EXPECT_THAT(read_probe_errors(path), ElementsAre(Key("0000:3b:00.0")));

  xpud::test::CapturedLog log;
  std::string huge;
  while (huge.size() <= kMaxProbeErrorBytes) huge += "0000:3b:00.0 sn 0 xpu0 19 No such device\n";
  tree.set_probe_errors(huge);
  EXPECT_TRUE(read_probe_errors(path).empty());
  EXPECT_THAT(log.text(), HasSubstr("ignoring " + path.string() + ": larger than"));
}

}  // namespace
}  // namespace xpud::sysfs
