// The authentication that opens a client's stream, read as the sd-bus server behind it reads it.
//
// Where the authentication ends, messages begin: a filter that ends it at another byte than sd-bus
// does frames every later byte differently, and a message the filter passes as small pieces is one
// large message to sd-bus. So this follows sd-bus's server (libsystemd 252,
// src/libsystemd/sd-bus/bus-socket.c, bus_socket_auth_verify_server, verify_external_token,
// verify_anonymous_token), configured as configure_client_bus (client_bus.h) configures it:
// anonymous authentication allowed, no descriptor passing. sd-bus's server
//   - fails the connection unless the first byte is NUL; then reads lines ending in CRLF (any bytes
//     but that pair, up to 64 KiB of authentication in all);
//   - keeps one fact, the mechanism accepted (none at first): "AUTH EXTERNAL" or "AUTH ANONYMOUS"
//     sets it when sd-bus takes its argument (none, answered DATA, or one answered OK: for EXTERNAL
//     hex of a decimal uid as parse_uid takes it, any uid; for ANONYMOUS hex of UTF-8 without NUL)
//     and leaves it as it was when not (REJECTED); any other "AUTH" is REJECTED and changes
//     nothing; "CANCEL" and "ERROR" clear it (REJECTED); "DATA" checks its argument against the
//     mechanism accepted (OK), clears it when it fails (REJECTED), and is ERROR without one;
//     NEGOTIATE_UNIX_FD and anything else are ERROR and change nothing;
//   - on "BEGIN" with a mechanism accepted, ends the authentication: the next byte starts a
//     message; on BEGIN without one answers ERROR and stays in the authentication.
//
// The rule here: the authentication ends on the client's BEGIN after an AUTH (or DATA) that
// sd-bus certainly accepted and nothing since cleared. Wherever this reader cannot be certain what
// sd-bus does, it closes the connection rather than guess:
//   - BEGIN before an accepted AUTH (sd-bus would stay in the authentication, and read what the
//     filter takes for messages as more lines);
//   - an AUTH or DATA argument that is not plain pairs of hex digits spelling a uid below
//     4294967295 other than 65535 with no leading zero (EXTERNAL), or printable ASCII (ANONYMOUS):
//     sd-bus accepts some of the others (it skips whitespace between hex digits) and refuses
//     the rest, and the filter need not tell which;
//   - a byte other than printable ASCII in a line, or a CR without LF, or no NUL first;
//   - more than `max_bytes` in all.
// Every real client's exchange passes (sd-bus's "AUTH EXTERNAL", "DATA", "NEGOTIATE_UNIX_FD",
// "BEGIN" in one write; libdbus's and GDBus's "AUTH EXTERNAL <hex uid>" then the rest), and the
// bytes after BEGIN in the same write are the first message's. fuzz/api_proxy_differential_fuzzer
// runs the same bytes through this and through a real sd-bus server.
//
// Pure: bytes in, bytes out (inbound_filter_test.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/result.h"

namespace xpu::api_proxy {

class AuthExchange {
 public:
  explicit AuthExchange(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  // Consumes the client's bytes from `data` up to the end of the authentication (the BEGIN that
  // ends it included) and appends what sd-bus may read to `out`: the NUL at once, each line once
  // it is whole and understood. An error names what is wrong; the connection is to be closed.
  Status feed(std::string_view& data, std::string& out);

  bool over() const { return over_; }

 private:
  enum class Mechanism { None, External, Anonymous };

  Status take_line(std::string_view line);

  std::size_t max_bytes_;
  std::size_t bytes_ = 0;
  std::string line_;  // the line read so far, without its CR
  bool cr_ = false;   // the line's CR has come; LF must follow
  Mechanism mechanism_ = Mechanism::None;
  bool over_ = false;
};

}  // namespace xpu::api_proxy
