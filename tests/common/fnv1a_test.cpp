// The FNV authors' test vectors: the checkpoint's checksum and the socket names are written with
// these values, so a change here would break files and names already out there.
#include "common/fnv1a.h"

#include <gtest/gtest.h>

namespace xpu {
namespace {

TEST(Fnv1a, MatchesTheReferenceVectors) {
  EXPECT_EQ(fnv1a_32(""), 0x811c9dc5u);
  EXPECT_EQ(fnv1a_32("a"), 0xe40c292cu);
  EXPECT_EQ(fnv1a_32("foobar"), 0xbf9cf968u);
  EXPECT_EQ(fnv1a_64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a_64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a_64("foobar"), 0x85944171f73967e8ull);
}

TEST(Fnv1a, BytesAboveSevenBitsHashAsUnsigned) {
  EXPECT_EQ(fnv1a_64("\xff"), (0xcbf29ce484222325ull ^ 0xffu) * 0x100000001b3ull);
}

}  // namespace
}  // namespace xpu
