#include "xpud/backends/pci_ids.h"

#include <gtest/gtest.h>

namespace xpud::pci {
namespace {

TEST(NormalizeBusId, TakesSysfsAndLibrarySpellings) {
  EXPECT_EQ(normalize_bus_id("0000:3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalize_bus_id("00000000:3B:00.0"), "0000:3b:00.0");  // the library's %08X
  EXPECT_EQ(normalize_bus_id("0:3:1f.7"), "0000:03:1f.7");
}

TEST(NormalizeBusId, RefusesFieldsOutOfRange) {
  EXPECT_EQ(normalize_bus_id("10000:00:00.0"), std::nullopt);
  EXPECT_EQ(normalize_bus_id("0000:100:00.0"), std::nullopt);
  EXPECT_EQ(normalize_bus_id("0000:00:20.0"), std::nullopt);
  EXPECT_EQ(normalize_bus_id("0000:00:00.8"), std::nullopt);
}

// Found by fuzz/sysfs_attribute_fuzzer: the device field 0x200000000 does not fit 32 bits, and
// sscanf's %x wrapped it to 0, so a malformed address from the library passed as the card at
// 0000:3b:00.0 (and could take that card's place and id).
TEST(NormalizeBusId, RefusesFieldsThatOverflow) {
  EXPECT_EQ(normalize_bus_id("00000000:3B:00200000000.0"), std::nullopt);
  EXPECT_EQ(normalize_bus_id("100000000:3b:00.0"), std::nullopt);
  EXPECT_EQ(normalize_bus_id("0000:3b:00.100000000"), std::nullopt);
}

TEST(NormalizeBusId, RefusesAnythingButHexFields) {
  for (const char* text : {"", "0000:3b:00", "0000:3b.00.0", " 0000:3b:00.0", "0000:3b:00.0 ",
                           "0x0:3b:00.0", "0000:-1:00.0", "0000:+3b:00.0", "0000:3b:00.0.0",
                           "0000:3b:00:0.0", "0000::00.0", "0000:3b:.0", "0000:3b:00."})
    EXPECT_EQ(normalize_bus_id(text), std::nullopt) << '"' << text << '"';
}

}  // namespace
}  // namespace xpud::pci
