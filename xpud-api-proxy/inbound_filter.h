// What a client writes to the API socket, checked before sd-bus reads any of it.
//
// sd-bus takes messages of up to 128 MiB and reads each one whole into memory before anyone can
// look at it; the system bus takes 32 MiB, and drops a connection that sends more. So a single
// large call from any local user would have raised the proxy's memory past its unit's MemoryMax
// and, forwarded, cost it its connection to the system bus. This filter sits between the client's
// socket and sd-bus (a socketpair) and follows the stream's framing:
//
//   - the authentication: a NUL byte, then text lines ending in CRLF (D-Bus specification,
//     "Authentication Protocol"), read as sd-bus's server reads them (auth_exchange.h): it ends
//     on the client's BEGIN after an AUTH that sd-bus accepted, and wherever the filter could
//     disagree with sd-bus about that byte (BEGIN before an accepted AUTH, an argument it cannot
//     be sure of, a byte no client sends) the connection is closed; bounded in length;
//   - then messages: a 16-byte fixed header (endianness 'l' or 'B', type, flags, major version 1,
//     body length, serial, header-field array length) whose lengths give the message's size
//     (specification, "Message Format": the header padded to 8, then the body).
//
// A message larger than the limit never reaches sd-bus and is never held in memory: its bytes are
// read and dropped as they come. A method call among them is replaced by a small call of the
// proxy's own (kRefusedInterface.kTooLargeMember, with the same serial and flags, carrying the
// refused size), so the session answers it with LimitsExceeded in order, as the bus would.
// A stream that is no D-Bus client's (a bad endianness mark, type or version) is refused.
//
// Pure: bytes in, bytes out, no I/O (inbound_filter_test.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "xpud-api-proxy/auth_exchange.h"

namespace xpu::api_proxy {

// The proxy's stand-in for a refused call: method kTooLargeMember of kRefusedInterface at
// kRefusedPath, to the bus driver, one argument "t" (the refused message's size in bytes).
inline constexpr std::string_view kRefusedInterface = "com.kunlunxin.xpud1.ApiProxy";
inline constexpr std::string_view kRefusedPath = "/com/kunlunxin/xpud1/ApiProxy";
inline constexpr std::string_view kTooLargeMember = "MessageTooLarge";

class InboundFilter {
 public:
  // `max_message_bytes`: the largest whole message (header and body) passed on.
  // `max_auth_bytes`: how long the authentication may be, BEGIN included.
  explicit InboundFilter(std::uint64_t max_message_bytes, std::size_t max_auth_bytes = 16384);

  // Consumes `data`, the next bytes the client wrote, and appends to `out` what sd-bus may read.
  // An error names what is wrong with the stream; the connection is to be closed.
  Status feed(std::string_view data, std::string& out);

  bool authenticated() const { return auth_.over(); }
  // Messages refused for their size so far.
  std::uint64_t refused() const { return refused_; }
  std::uint64_t max_message_bytes() const { return max_message_bytes_; }

 private:
  enum class Phase { Authentication, Header, Passing, Dropping };

  Status take_header(std::string& out);

  std::uint64_t max_message_bytes_;
  AuthExchange auth_;
  Phase phase_ = Phase::Authentication;
  std::string header_;           // the fixed header read so far
  std::uint64_t remaining_ = 0;  // bytes of the current message still to pass or drop
  std::uint64_t refused_ = 0;
};

// The stand-in call for a refused method call of `size` bytes: little-endian, `serial` and
// `flags` as the client sent them. Exposed for the tests.
std::string too_large_call(std::uint32_t serial, std::uint8_t flags, std::uint64_t size);

}  // namespace xpu::api_proxy
