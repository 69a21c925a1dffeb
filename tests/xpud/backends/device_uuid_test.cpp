// The device ids both hardware backends give a card whose hardware reports none.
#include "xpud/backends/device_uuid.h"

#include <cstdio>
#include <regex>
#include <set>
#include <string>

#include <gtest/gtest.h>

namespace xpud {
namespace {

std::string hex(const Sha1Digest& digest) {
  std::string text;
  for (auto byte : digest) {
    char pair[3];
    std::snprintf(pair, sizeof pair, "%02x", byte);
    text += pair;
  }
  return text;
}

// Known answers from FIPS 180-2 appendix A and from Python's hashlib for the padding edges
// (55 bytes fit one block, 56 need a second, 64 fill a block exactly).
TEST(XpudSha1, MatchesKnownAnswers) {
  EXPECT_EQ(hex(sha1("")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(hex(sha1("abc")), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(hex(sha1("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  EXPECT_EQ(hex(sha1(std::string(55, 'a'))), "c1c8bbdc22796e28c0e15163d20899b65621d65a");
  EXPECT_EQ(hex(sha1(std::string(56, 'a'))), "c2db330f6083854c99d4b5bfb6e8f29f201be699");
  EXPECT_EQ(hex(sha1(std::string(64, 'a'))), "0098ba824b5c16427bd7a1122a5a442a25ec644d");
}

// RFC 4122's DNS namespace; the expected value is Python's uuid.uuid5(NAMESPACE_DNS, "python.org").
TEST(XpudUuidV5, MatchesPythonUuid5) {
  constexpr UuidBytes kDnsNamespace = {0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1,
                                       0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8};
  EXPECT_EQ(uuid_v5(kDnsNamespace, "python.org"), "886313e1-3b8a-5372-9b90-0c9aee199e5d");
  EXPECT_EQ(uuid_v5(kDnsNamespace, "xpud.kunlunxin.com"), "a97d801b-b970-5a36-be32-305e94539e10");
}

// The device ids Kubernetes sees must never change between releases: these are what
// python3 -c 'import uuid; print(uuid.uuid5(uuid.UUID("a97d801b-..."), "0000:3b:00.0/R200/0"))'
// prints.
TEST(XpudDerivedDeviceUuid, IsTheV5IdOfBusIdPciModelAndChip) {
  EXPECT_EQ(derived_device_uuid("0000:3b:00.0", "R200", 0), "8476b011-3489-568c-b45e-bbf7ea54fcab");
  EXPECT_EQ(derived_device_uuid("0000:3b:00.0", "R300", 0), "3cc360a2-7ac0-5bbf-899b-514334eedef7");
  EXPECT_EQ(derived_device_uuid("0000:3b:00.0", "K200", 0), "59629bb3-fa20-5476-a2c0-a2b5165b9f38");
  EXPECT_EQ(derived_device_uuid("0000:3b:00.0", "K200", 1), "e79a38c5-bbb0-52a6-b5a0-166010adb483");
}

TEST(XpudDerivedDeviceUuid, IsAUsableVersion5UuidDistinctPerCard) {
  const std::regex format("^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  std::set<std::string> seen;
  for (unsigned bus = 0; bus < 256; ++bus) {
    char bus_id[16];
    std::snprintf(bus_id, sizeof bus_id, "0000:%02x:00.0", bus);
    for (unsigned chip = 0; chip < 2; ++chip) {
      std::string uuid = derived_device_uuid(bus_id, "K200", chip);
      EXPECT_TRUE(std::regex_match(uuid, format)) << uuid;
      EXPECT_TRUE(is_usable_device_uuid(uuid)) << uuid;
      EXPECT_TRUE(seen.insert(uuid).second) << uuid;
    }
  }
}

TEST(XpudUsableDeviceUuid, AcceptsOnlyShortListAndLabelSafeText) {
  EXPECT_TRUE(is_usable_device_uuid("fa4e0000-0000-4000-8000-000000000001"));
  EXPECT_TRUE(is_usable_device_uuid("XPU-1234_abc.5"));
  EXPECT_FALSE(is_usable_device_uuid(""));
  EXPECT_FALSE(is_usable_device_uuid(std::string(64, 'a')));
  EXPECT_TRUE(is_usable_device_uuid(std::string(63, 'a')));
  EXPECT_FALSE(is_usable_device_uuid("a,b"));
  EXPECT_FALSE(is_usable_device_uuid("a b"));
  EXPECT_FALSE(is_usable_device_uuid("a/b"));
  EXPECT_FALSE(is_usable_device_uuid("a\nb"));
}

}  // namespace
}  // namespace xpud
