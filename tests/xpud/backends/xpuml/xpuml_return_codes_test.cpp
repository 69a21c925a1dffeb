#include <set>

#include <gtest/gtest.h>

#include "xpud/backends/xpuml/xpuml_return_codes.h"

namespace xpud::xpuml {
namespace {

TEST(XpumlReturnCodes, EveryDocumentedCodeHasADistinctNameAndADescription) {
  std::set<int> codes;
  std::set<std::string_view> names;
  for (const auto& info : kReturnCodes) {
    EXPECT_TRUE(codes.insert(info.code).second) << info.code;
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_FALSE(info.description.empty()) << info.name;
  }
  // 0..24 and 999, as the library documents them.
  for (int code = 0; code <= 24; ++code) EXPECT_TRUE(codes.contains(code)) << code;
  EXPECT_TRUE(codes.contains(999));
}

TEST(XpumlReturnCodes, LabelNamesTheCodeAndItsNumber) {
  EXPECT_EQ(return_code_label(XPUML_ERROR_XPU_IS_LOST), "XPU_IS_LOST (15)");
  EXPECT_EQ(return_code_label(XPUML_ERROR_UNKNOWN), "UNKNOWN (999)");
  EXPECT_EQ(return_code_label(-3), "unrecognised code (-3)");
}

TEST(XpumlReturnCodes, ParsesNamesWithOrWithoutPrefixAndNumbers) {
  EXPECT_EQ(parse_return_code("XPU_IS_LOST"), 15);
  EXPECT_EQ(parse_return_code("XPUML_ERROR_XPU_IS_LOST"), 15);
  EXPECT_EQ(parse_return_code("XPUML_SUCCESS"), 0);
  EXPECT_EQ(parse_return_code("999"), 999);
  EXPECT_EQ(parse_return_code("12345"), 12345);
  EXPECT_EQ(parse_return_code("LOST"), std::nullopt);
  EXPECT_EQ(parse_return_code(""), std::nullopt);
  EXPECT_EQ(parse_return_code("15x"), std::nullopt);
}

}  // namespace
}  // namespace xpud::xpuml
