// The validator's checks as a pod would meet them: a device directory made here, where a card's
// node is a character device (a link to /dev/null, which stat() follows) or something else.
#include "k8s-shim/validate/allocation_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/child_process.h"

namespace shim::validate {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class AllocationCheckTest : public ::testing::Test {
 protected:
  void add_character_device(const std::string& name) {
    fs::create_symlink("/dev/null", dir_.path() / name);
  }
  AllocationReport check(std::optional<std::string> visible,
                         std::optional<unsigned> expect = std::nullopt) {
    return check_allocation({std::move(visible), dir_.path(), expect});
  }
  std::string node(const std::string& name) const { return (dir_.path() / name).string(); }

  xpu::test::TempDir dir_;
};

TEST_F(AllocationCheckTest, TwoCardsWithTheirNodesAndTheControlNodePass) {
  add_character_device("xpu3");
  add_character_device("xpu7");
  add_character_device("xpuctrl");
  const auto report = check("7,3", 2);
  EXPECT_TRUE(report.passed);
  EXPECT_THAT(report.lines, ElementsAre("ok: XPU_VISIBLE_DEVICES=7,3",
                                        "ok: " + node("xpu7") + " is a character device",
                                        "ok: " + node("xpu3") + " is a character device",
                                        "ok: " + node("xpuctrl") + " is a character device"));
}

TEST_F(AllocationCheckTest, NoVariableMeansNoCardWasGiven) {
  add_character_device("xpuctrl");
  const auto report = check(std::nullopt, 1);
  EXPECT_FALSE(report.passed);
  EXPECT_THAT(report.lines,
              ElementsAre("FAILED: XPU_VISIBLE_DEVICES is not set: the container was given no card",
                          "ok: " + node("xpuctrl") + " is a character device"));
}

TEST_F(AllocationCheckTest, AMissingNodeAndAPlainFileAreEachNamed) {
  add_character_device("xpuctrl");
  std::ofstream(dir_.path() / "xpu1") << "not a device";
  const auto report = check("0,1");
  EXPECT_FALSE(report.passed);
  EXPECT_THAT(report.lines,
              ElementsAre("ok: XPU_VISIBLE_DEVICES=0,1",
                          "FAILED: " + node("xpu0") + " (card 0): No such file or directory",
                          "FAILED: " + node("xpu1") + " (card 1): not a character device",
                          "ok: " + node("xpuctrl") + " is a character device"));
}

TEST_F(AllocationCheckTest, AMissingControlNodeFails) {
  add_character_device("xpu2");
  const auto report = check("2");
  EXPECT_FALSE(report.passed);
  EXPECT_EQ(report.lines.back(), "FAILED: " + node("xpuctrl") +
                                     " (the driver's control node): No such file or directory");
}

TEST_F(AllocationCheckTest, AnotherCountThanExpectedFails) {
  add_character_device("xpu2");
  add_character_device("xpuctrl");
  const auto report = check("2", 4);
  EXPECT_FALSE(report.passed);
  EXPECT_THAT(report.lines,
              ::testing::Contains("FAILED: expected 4 card(s), XPU_VISIBLE_DEVICES names 1"));
}

TEST_F(AllocationCheckTest, MalformedListsAreNamedAndCheckNoNode) {
  add_character_device("xpuctrl");
  for (const auto& [value, why] : std::vector<std::pair<std::string, std::string>>{
           {"", "is empty"},
           {"1,,2", "'' is not a card index (0 to 255)"},
           {"1,x", "'x' is not a card index (0 to 255)"},
           {"3,3", "names card 3 twice"},
           {"256", "'256' is not a card index (0 to 255)"},
           {"-1", "'-1' is not a card index"},
           {"1\n2", "'1\\x0a2' is not a card index"}}) {
    const auto report = check(value, 1);
    EXPECT_FALSE(report.passed) << value;
    ASSERT_EQ(report.lines.size(), 2u) << value;  // the list, then the control node only
    EXPECT_THAT(report.lines[0], HasSubstr("FAILED: XPU_VISIBLE_DEVICES " + why)) << value;
  }
}

}  // namespace
}  // namespace shim::validate
