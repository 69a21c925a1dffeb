// The inbound filter between a client's socket and sd-bus: what passes, what is replaced by the
// proxy's stand-in call, and what ends the connection.
#include "xpud-api-proxy/inbound_filter.h"

#include <gtest/gtest.h>

#include <cstring>

namespace {

using xpu::api_proxy::InboundFilter;
using xpu::api_proxy::too_large_call;

const std::string kAuth = std::string("\0AUTH EXTERNAL 30\r\nNEGOTIATE_UNIX_FD\r\nBEGIN\r\n", 45);

// A message as the wire carries it: the fixed header, `fields` bytes of header fields (their
// content does not matter to the filter), padding to 8, `body` bytes of body.
std::string message(char endian, std::uint8_t type, std::uint8_t flags, std::uint32_t serial,
                    std::uint32_t fields, std::uint32_t body, char fill = 'x') {
  std::string m;
  m += endian;
  m += static_cast<char>(type);
  m += static_cast<char>(flags);
  m += '\x01';
  auto put = [&](std::uint32_t v) {
    for (int i = 0; i < 4; ++i)
      m += static_cast<char>(endian == 'l' ? (v >> (8 * i)) & 0xff : (v >> (8 * (3 - i))) & 0xff);
  };
  put(body);
  put(serial);
  put(fields);
  m.append(fields, fill);
  m.append((8 - fields % 8) % 8, '\0');
  m.append(body, fill);
  return m;
}

std::string feed_all(InboundFilter& filter, const std::string& bytes, std::size_t chunk) {
  std::string out;
  for (std::size_t at = 0; at < bytes.size(); at += chunk) {
    auto status = filter.feed(std::string_view(bytes).substr(at, chunk), out);
    EXPECT_TRUE(status) << status.error();
  }
  return out;
}

TEST(InboundFilter, PassesAuthenticationAndMessagesByteForByteInAnyChunking) {
  const std::string stream = kAuth + message('l', 1, 0, 1, 110, 0) +
                             message('B', 1, 0, 2, 64, 4000) + message('l', 4, 1, 3, 31, 9);
  for (std::size_t chunk : {1u, 3u, 16u, 17u, 4096u}) {
    InboundFilter filter(8192);
    EXPECT_EQ(feed_all(filter, stream, chunk), stream) << "chunk " << chunk;
    EXPECT_TRUE(filter.authenticated());
    EXPECT_EQ(filter.refused(), 0u);
  }
}

TEST(InboundFilter, AnOversizedCallIsReplacedByTheStandInAndTheRestPasses) {
  const std::string big = message('B', 1, 1, 77, 120, 40u * 1024 * 1024);
  const std::string next = message('l', 1, 0, 78, 100, 16);
  InboundFilter filter(128 * 1024);
  std::string out;
  ASSERT_TRUE(filter.feed(kAuth, out));
  out.clear();
  // Fed as a socket delivers it; what comes out never holds the big message.
  std::size_t largest_output = 0;
  const std::string stream = big + next;
  for (std::size_t at = 0; at < stream.size(); at += 65536) {
    std::string chunk_out;
    ASSERT_TRUE(filter.feed(std::string_view(stream).substr(at, 65536), chunk_out));
    largest_output = std::max(largest_output, chunk_out.size());
    out += chunk_out;
  }
  const std::string stand_in = too_large_call(77, 1, big.size());
  EXPECT_EQ(out, stand_in + next);
  EXPECT_LT(largest_output, 1024u);
  EXPECT_EQ(filter.refused(), 1u);
}

TEST(InboundFilter, AnOversizedSignalOrReplyIsDroppedWithoutAnswer) {
  const std::string next = message('l', 1, 0, 9, 40, 0);
  InboundFilter filter(4096);
  std::string out;
  ASSERT_TRUE(filter.feed(kAuth, out));
  out.clear();
  const std::string stream =
      message('l', 4, 0, 5, 40, 5000) + message('l', 2, 0, 6, 40, 5000) + next;
  ASSERT_TRUE(filter.feed(stream, out));
  EXPECT_EQ(out, next);
  EXPECT_EQ(filter.refused(), 2u);
}

TEST(InboundFilter, TheLimitCountsHeaderPaddingAndBody) {
  // 16 + 44 + 4 padding + 64 = 128 bytes: at the limit passes, one over does not.
  const std::string exact = message('l', 1, 0, 1, 44, 64);
  ASSERT_EQ(exact.size(), 128u);
  InboundFilter at_limit(128);
  std::string out;
  ASSERT_TRUE(at_limit.feed(kAuth + exact, out));
  EXPECT_EQ(out, kAuth + exact);
  InboundFilter below(127);
  out.clear();
  ASSERT_TRUE(below.feed(kAuth + exact, out));
  EXPECT_EQ(out, kAuth + too_large_call(1, 0, 128));
}

TEST(InboundFilter, TheStandInIsAWellFormedLittleEndianCall) {
  const std::string call = too_large_call(0x01020304, 1, 41943040);
  ASSERT_EQ(call.size() % 8, 0u);
  EXPECT_EQ(call[0], 'l');
  EXPECT_EQ(call[1], 1);  // method call
  EXPECT_EQ(call[2], 1);  // the client's flags (here NO_REPLY_EXPECTED)
  EXPECT_EQ(call[3], 1);  // protocol version
  std::uint32_t body = 0, serial = 0, fields = 0;
  std::memcpy(&body, call.data() + 4, 4);
  std::memcpy(&serial, call.data() + 8, 4);
  std::memcpy(&fields, call.data() + 12, 4);
  EXPECT_EQ(body, 8u);
  EXPECT_EQ(serial, 0x01020304u);
  EXPECT_EQ(16 + fields + (8 - fields % 8) % 8 + body, call.size());
  std::uint64_t size = 0;
  std::memcpy(&size, call.data() + call.size() - 8, 8);
  EXPECT_EQ(size, 41943040u);
  for (const char* text : {"com.kunlunxin.xpud1.ApiProxy", "MessageTooLarge",
                           "org.freedesktop.DBus", "/com/kunlunxin/xpud1/ApiProxy"})
    EXPECT_NE(call.find(text), std::string::npos) << text;
  // And it passes the filter itself unchanged, as sd-bus will read it.
  InboundFilter filter(1024);
  std::string out;
  ASSERT_TRUE(filter.feed(kAuth + call, out));
  EXPECT_EQ(out, kAuth + call);
}

TEST(InboundFilter, AStreamThatIsNoDBusClientsIsRefusedByName) {
  struct Case {
    std::string bytes;
    std::string error;
  };
  std::string bad_version = message('l', 1, 0, 1, 8, 0);
  bad_version[3] = 2;
  const Case cases[] = {
      {kAuth + std::string(16, '\xff'), "it sent no D-Bus message (endianness mark 255)"},
      {kAuth + message('l', 9, 0, 1, 8, 0), "it sent a message of unknown type 9"},
      {kAuth + message('l', 0, 0, 1, 8, 0), "it sent a message of unknown type 0"},
      {kAuth + bad_version, "it sent a message of protocol version 2"},
      {kAuth + message('l', 1, 0, 0, 8, 0), "it sent a message with serial 0"},
      {std::string(1, '\0') + std::string(20000, 'A'),
       "its authentication went on past 16384 bytes"},
  };
  for (const auto& c : cases) {
    InboundFilter filter(4096);
    std::string out;
    auto status = filter.feed(c.bytes, out);
    ASSERT_FALSE(status) << c.error;
    EXPECT_EQ(status.error(), c.error);
  }
}

TEST(InboundFilter, ALongButFiniteAuthenticationIsWithinTheLimit) {
  InboundFilter filter(4096);
  std::string auth = std::string(1, '\0');
  for (int i = 0; i < 100; ++i) auth += "DATA 0102030405060708090a\r\n";
  auth += "BEGIN\r\n";
  std::string out;
  ASSERT_TRUE(filter.feed(auth, out));
  EXPECT_TRUE(filter.authenticated());
  EXPECT_EQ(out, auth);
}

}  // namespace
