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
  auth += "AUTH EXTERNAL\r\n";
  for (int i = 0; i < 100; ++i) auth += "DATA 31303030\r\n";
  auth += "BEGIN\r\n";
  std::string out;
  ASSERT_TRUE(filter.feed(auth, out));
  EXPECT_TRUE(filter.authenticated());
  EXPECT_EQ(out, auth);
}

// The authentication as sd-bus's server reads it (auth_exchange.h): it ends on BEGIN after an AUTH
// sd-bus accepted, and where the filter could not be sure what sd-bus does, the connection ends.

// Feeds `stream` whole, then in pieces of every size up to 16: the same outcome either way.
struct Outcome {
  std::string out;
  std::string error;  // empty: the stream was taken
  bool authenticated = false;
};

Outcome run_filter(const std::string& stream, std::size_t piece) {
  InboundFilter filter(4096);
  Outcome outcome;
  for (std::size_t at = 0; at < stream.size(); at += piece) {
    auto status = filter.feed(std::string_view(stream).substr(at, piece), outcome.out);
    if (!status) {
      outcome.error = status.error();
      break;
    }
  }
  outcome.authenticated = filter.authenticated();
  return outcome;
}

Outcome run_filter(const std::string& stream) {
  Outcome whole = run_filter(stream, stream.size());
  for (std::size_t piece = 1; piece <= 16; ++piece) {
    const Outcome pieces = run_filter(stream, piece);
    EXPECT_EQ(pieces.out, whole.out) << "piece " << piece;
    EXPECT_EQ(pieces.error, whole.error) << "piece " << piece;
  }
  return whole;
}

const std::string kHello = message('l', 1, 0, 1, 110, 0);

std::string nul_then(const std::string& lines) {
  return std::string(1, '\0') + lines;
}

TEST(InboundFilterAuthentication, EveryRealClientsExchangePassesWithTheMessagesAfterIt) {
  const std::string exchanges[] = {
      // sd-bus (busctl, the shim, xpuctl): all in one write, Hello right behind.
      nul_then("AUTH EXTERNAL\r\nDATA\r\nNEGOTIATE_UNIX_FD\r\nBEGIN\r\n"),
      nul_then("AUTH ANONYMOUS 616e6f6e796d6f7573\r\nBEGIN\r\n"),
      // libdbus (dbus-send), GDBus: the uid in hex, NEGOTIATE_UNIX_FD answered ERROR here.
      nul_then("AUTH EXTERNAL 31303030\r\nNEGOTIATE_UNIX_FD\r\nBEGIN\r\n"),
      nul_then("AUTH EXTERNAL 30\r\nBEGIN\r\n"),
      nul_then("AUTH EXTERNAL 34323934393637323934\r\nBEGIN\r\n"),  // 4294967294
      // A client that asks for the mechanisms first, or tries one sd-bus does not have.
      nul_then("AUTH\r\nAUTH DBUS_COOKIE_SHA1 31303030\r\nAUTH EXTERNAL 3635353334\r\nBEGIN\r\n"),
      // ANONYMOUS with its trace in DATA; upper-case hex.
      nul_then("AUTH ANONYMOUS\r\nDATA 6C6962646275732031\r\nBEGIN\r\n"),
      // CANCEL, then a new AUTH; lines sd-bus answers ERROR change nothing.
      nul_then("AUTH EXTERNAL 30\r\nCANCEL\r\nAUTH ANONYMOUS\r\nBEGIN\r\n"),
      nul_then("AUTH EXTERNAL\r\nERRORS\r\nSTARTTLS\r\n\r\nBEGIN \r\nBEGIN\r\n"),
      nul_then("DATA 7a\r\nAUTH EXTERNAL\r\nBEGIN\r\n"),  // DATA before AUTH: ERROR, unchecked
  };
  for (const auto& exchange : exchanges) {
    const Outcome outcome = run_filter(exchange + kHello);
    EXPECT_EQ(outcome.error, "") << exchange;
    EXPECT_TRUE(outcome.authenticated) << exchange;
    EXPECT_EQ(outcome.out, exchange + kHello) << exchange;
  }
}

TEST(InboundFilterAuthentication, BeginBeforeAnAcceptedAuthClosesTheConnection) {
  const std::string never_accepted[] = {
      nul_then("BEGIN\r\n"),
      nul_then("AUTH\r\nBEGIN\r\n"),
      nul_then("AUTH EXTERNALX\r\nBEGIN\r\n"),  // not EXTERNAL: another mechanism, REJECTED
      nul_then("DATA\r\nBEGIN\r\n"),
      nul_then("AUTH EXTERNAL\r\nCANCEL\r\nBEGIN\r\n"),
      nul_then("AUTH EXTERNAL 30\r\nERROR\r\nBEGIN\r\n"),
      nul_then("AUTH ANONYMOUS\r\nERROR \"no\"\r\nBEGIN\r\n"),
  };
  for (const auto& exchange : never_accepted) {
    const Outcome outcome = run_filter(exchange + kHello);
    EXPECT_EQ(outcome.error, "it sent BEGIN before sd-bus had accepted an AUTH") << exchange;
    EXPECT_FALSE(outcome.authenticated);
    // Nothing from the BEGIN on reaches sd-bus.
    EXPECT_EQ(outcome.out, exchange.substr(0, exchange.rfind("BEGIN"))) << exchange;
  }
}

TEST(InboundFilterAuthentication, TheSmuggleEndsAtItsFirstBegin) {
  // BEGIN first, then a small message whose body holds the authentication sd-bus would take
  // (it stays in its authentication after a BEGIN it answered ERROR) and the header of a large
  // message; then the large message's bytes as small messages. None of it reaches sd-bus.
  const std::string smuggled_auth = "\r\nAUTH EXTERNAL 30\r\nBEGIN\r\n" +
                                    message('l', 1, 0, 9, 8, 3000).substr(0, 16);  // header alone
  std::string carrier = message('l', 1, 0, 1, 40, static_cast<std::uint32_t>(smuggled_auth.size()));
  carrier.replace(carrier.size() - smuggled_auth.size(), smuggled_auth.size(), smuggled_auth);
  const std::string stream = nul_then("BEGIN\r\n") + carrier + message('l', 1, 0, 2, 40, 3000);
  const Outcome outcome = run_filter(stream);
  EXPECT_EQ(outcome.error, "it sent BEGIN before sd-bus had accepted an AUTH");
  EXPECT_EQ(outcome.out, std::string(1, '\0'));
}

TEST(InboundFilterAuthentication, ArgumentsSdBusMightReadOtherwiseCloseTheConnection) {
  struct Case {
    std::string lines;
    std::string error;
  };
  const std::string external = "its AUTH EXTERNAL argument is not one sd-bus certainly takes: ";
  const std::string anonymous = "its AUTH ANONYMOUS argument is not one sd-bus certainly takes: ";
  const Case cases[] = {
      // sd-bus skips whitespace between hex digits: "30 30" is "00" to it, refused; "3 0" is
      // "0", taken. Neither is guessed at.
      {"AUTH EXTERNAL 3 0\r\n", external + "'AUTH EXTERNAL 3 0'"},
      {"AUTH EXTERNAL 30 30\r\n", external + "'AUTH EXTERNAL 30 30'"},
      {"AUTH EXTERNAL 3\r\n", external + "'AUTH EXTERNAL 3'"},
      {"AUTH EXTERNAL \r\n", external + "'AUTH EXTERNAL '"},
      {"AUTH EXTERNAL 3030\r\n", external + "'AUTH EXTERNAL 3030'"},              // "00"
      {"AUTH EXTERNAL 2b31\r\n", external + "'AUTH EXTERNAL 2b31'"},              // "+1"
      {"AUTH EXTERNAL 3635353335\r\n", external + "'AUTH EXTERNAL 3635353335'"},  // 65535
      {"AUTH EXTERNAL 34323934393637323935\r\n",                                  // 2^32 - 1
       external + "'AUTH EXTERNAL 34323934393637323935'"},
      {"AUTH EXTERNAL 7a7a\r\n", external + "'AUTH EXTERNAL 7a7a'"},
      {"AUTH ANONYMOUS 00\r\n", anonymous + "'AUTH ANONYMOUS 00'"},
      {"AUTH ANONYMOUS 0a\r\n", anonymous + "'AUTH ANONYMOUS 0a'"},
      {"AUTH ANONYMOUS c3a9\r\n", anonymous + "'AUTH ANONYMOUS c3a9'"},  // UTF-8, not ASCII
      {"AUTH EXTERNAL\r\nDATA 7a\r\n", "its DATA is not one sd-bus certainly takes: 'DATA 7a'"},
      {"AUTH ANONYMOUS\r\nDATA 00\r\n", "its DATA is not one sd-bus certainly takes: 'DATA 00'"},
      {"AUTH EXTERNAL " + std::string(60, '3') + "\r\n",
       external + "'AUTH EXTERNAL 33333333333333333333333333...'"},
  };
  for (const auto& c : cases) {
    const std::string stream = nul_then(c.lines + "BEGIN\r\n") + kHello;
    const Outcome outcome = run_filter(stream);
    EXPECT_EQ(outcome.error, c.error) << c.lines;
    EXPECT_FALSE(outcome.authenticated);
    // The line in question does not reach sd-bus.
    EXPECT_EQ(outcome.out.find(c.lines.substr(c.lines.rfind('\n', c.lines.size() - 3) + 1)),
              std::string::npos)
        << c.lines;
  }
}

TEST(InboundFilterAuthentication, BytesNoClientSendsCloseTheConnection) {
  struct Case {
    std::string bytes;
    std::string error;
  };
  const Case cases[] = {
      {"AUTH EXTERNAL\r\nBEGIN\r\n",
       "its authentication did not begin with the NUL byte (it began with byte 65)"},
      {nul_then("AUTH EXTERNAL\nBEGIN\r\n"),
       "an authentication line held byte 10 (only printable ASCII is taken)"},
      {nul_then("AUTH EXTERNAL\rBEGIN\r\n"), "an authentication line had a CR without LF"},
      {nul_then("AUTH EXTERNAL\r\n") + std::string(1, '\0') + "BEGIN\r\n",
       "an authentication line held byte 0 (only printable ASCII is taken)"},
      {nul_then("AUTH\tEXTERNAL\r\n"),
       "an authentication line held byte 9 (only printable ASCII is taken)"},
      {nul_then("AUTH EXTERNAL\r\n") + kHello,  // a message where lines are
       "an authentication line held byte 1 (only printable ASCII is taken)"},
  };
  for (const auto& c : cases) {
    const Outcome outcome = run_filter(c.bytes);
    EXPECT_EQ(outcome.error, c.error);
    EXPECT_FALSE(outcome.authenticated);
  }
}

TEST(InboundFilterAuthentication, ALineReachesSdBusOnlyWhenWhole) {
  InboundFilter filter(4096);
  std::string out;
  ASSERT_TRUE(filter.feed(nul_then("AUTH EXT"), out));
  EXPECT_EQ(out, std::string(1, '\0'));
  ASSERT_TRUE(filter.feed("ERNAL\r", out));
  EXPECT_EQ(out, std::string(1, '\0'));
  ASSERT_TRUE(filter.feed("\nBEG", out));
  EXPECT_EQ(out, nul_then("AUTH EXTERNAL\r\n"));
  ASSERT_TRUE(filter.feed("IN\r\n" + kHello, out));
  EXPECT_EQ(out, nul_then("AUTH EXTERNAL\r\nBEGIN\r\n") + kHello);
}

}  // namespace
