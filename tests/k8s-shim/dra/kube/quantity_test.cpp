#include "k8s-shim/dra/kube/quantity.h"

#include <gtest/gtest.h>

namespace shim::dra {
namespace {

std::int64_t must(std::string_view text) {
  auto value = parse_quantity(text);
  EXPECT_TRUE(value) << text << ": " << (value ? "" : value.error());
  return value ? *value : -1;
}

TEST(Quantity, ReadsTheCanonicalForms) {
  EXPECT_EQ(must("34359738368"), 34359738368);
  EXPECT_EQ(must("32Gi"), 34359738368);
  EXPECT_EQ(must("1500M"), 1500000000);
  EXPECT_EQ(must("1k"), 1000);
  EXPECT_EQ(must("1Ki"), 1024);
  EXPECT_EQ(must("3Mi"), 3 << 20);
  EXPECT_EQ(must("2Ti"), std::int64_t{2} << 40);
  EXPECT_EQ(must("1Pi"), std::int64_t{1} << 50);
  EXPECT_EQ(must("7Ei"), std::int64_t{7} << 60);
  EXPECT_EQ(must("5G"), 5000000000);
  EXPECT_EQ(must("4T"), 4000000000000);
  EXPECT_EQ(must("1P"), 1000000000000000);
  EXPECT_EQ(must("9E"), 9000000000000000000);
  EXPECT_EQ(must("0"), 0);
  EXPECT_EQ(must("-5"), -5);
  EXPECT_EQ(must("+5"), 5);
}

TEST(Quantity, ReadsExponentsAndWholeFractions) {
  EXPECT_EQ(must("1e3"), 1000);
  EXPECT_EQ(must("1E3"), 1000);
  EXPECT_EQ(must("12e+2"), 1200);
  EXPECT_EQ(must("2000e-3"), 2);
  EXPECT_EQ(must("1.5Gi"), 1610612736);
  EXPECT_EQ(must("2000m"), 2);
  EXPECT_EQ(must("0.5k"), 500);
  EXPECT_EQ(must("007"), 7);
}

TEST(Quantity, RefusesFractions) {
  EXPECT_FALSE(parse_quantity("0.5"));
  EXPECT_FALSE(parse_quantity("1500m"));
  EXPECT_FALSE(parse_quantity("1e-3"));
  EXPECT_FALSE(parse_quantity("1500e-3"));
  EXPECT_FALSE(parse_quantity("1u"));
  EXPECT_NE(parse_quantity("1.25").error().find("whole"), std::string::npos);
}

TEST(Quantity, RefusesOverflow) {
  EXPECT_EQ(must("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(must("-9223372036854775808"), INT64_MIN);
  EXPECT_FALSE(parse_quantity("9223372036854775808"));
  EXPECT_FALSE(parse_quantity("8Ei"));
  EXPECT_FALSE(parse_quantity("10E"));
  EXPECT_FALSE(parse_quantity("1e19"));
  EXPECT_FALSE(parse_quantity("1e999999999999999999"));
  EXPECT_FALSE(parse_quantity(std::string(5000, '9')));
  EXPECT_NE(parse_quantity("8Ei").error().find("range"), std::string::npos);
}

TEST(Quantity, RefusesGarbage) {
  for (std::string_view text : {"", "Gi", "-", ".", "1.2.3", "1Gix", "1 Gi", "1gi", "1e", "e3",
                                "1e3.5", "0x10", "1,000", "١٢", "1Ki1", "--1", "1e+"})
    EXPECT_FALSE(parse_quantity(text)) << text;
}

TEST(Quantity, WritesPlainIntegers) {
  EXPECT_EQ(format_quantity(34359738368), "34359738368");
  EXPECT_EQ(format_quantity(0), "0");
}

}  // namespace
}  // namespace shim::dra
