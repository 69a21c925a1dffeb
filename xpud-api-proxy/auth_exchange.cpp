#include "xpud-api-proxy/auth_exchange.h"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace xpu::api_proxy {
namespace {

constexpr std::string_view kAuthAnonymous = "AUTH ANONYMOUS";
constexpr std::string_view kAuthExternal = "AUTH EXTERNAL";
constexpr std::string_view kData = "DATA";
// A uid as sd-bus's parse_uid takes it: below UID_INVALID (2^32 - 1), and not the 16-bit -1.
constexpr std::uint64_t kUidInvalid = 0xffffffff;
constexpr std::uint64_t kUid16Invalid = 0xffff;
// How much of a refused line an error quotes.
constexpr std::size_t kQuoted = 40;

bool printable(char c) {
  return c >= 0x20 && c <= 0x7e;
}

// sd-bus's line_begins: `word`, then the line's end or a space.
bool line_begins(std::string_view line, std::string_view word) {
  return line.substr(0, word.size()) == word &&
         (line.size() == word.size() || line[word.size()] == ' ');
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The bytes `hex` spells when it is one or more pairs of hex digits and nothing else.
std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.empty() || hex.size() % 2 != 0) return std::nullopt;
  std::string bytes;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int high = hex_value(hex[i]);
    const int low = hex_value(hex[i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    bytes += static_cast<char>(high * 16 + low);
  }
  return bytes;
}

// An EXTERNAL argument sd-bus certainly takes: a decimal uid, "0" or without a leading zero,
// that parse_uid accepts (any uid will do: the server is anonymous).
bool certainly_a_uid(std::string_view hex) {
  const auto text = from_hex(hex);
  if (!text || text->size() > 10 || (text->size() > 1 && text->front() == '0')) return false;
  std::uint64_t uid = 0;
  for (const char c : *text) {
    if (c < '0' || c > '9') return false;
    uid = uid * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return uid < kUidInvalid && uid != kUid16Invalid;
}

// An ANONYMOUS argument (a trace string) sd-bus certainly takes: printable ASCII, which is UTF-8
// without NUL.
bool certainly_a_trace(std::string_view hex) {
  const auto text = from_hex(hex);
  return text && std::all_of(text->begin(), text->end(), printable);
}

std::string quoted(std::string_view line) {
  return "'" + std::string(line.substr(0, kQuoted)) + (line.size() > kQuoted ? "...'" : "'");
}

}  // namespace

Status AuthExchange::feed(std::string_view& data, std::string& out) {
  while (!data.empty() && !over_) {
    if (++bytes_ > max_bytes_)
      return Error{"its authentication went on past " + std::to_string(max_bytes_) + " bytes"};
    const char c = data.front();
    data.remove_prefix(1);
    if (bytes_ == 1) {
      if (c != '\0')
        return Error{"its authentication did not begin with the NUL byte (it began with byte " +
                     std::to_string(static_cast<unsigned char>(c)) + ")"};
      out += c;
    } else if (cr_) {
      if (c != '\n') return Error{"an authentication line had a CR without LF"};
      cr_ = false;
      if (auto status = take_line(line_); !status) return status;
      out += line_;
      out += "\r\n";
      line_.clear();
    } else if (c == '\r') {
      cr_ = true;
    } else if (printable(c)) {
      line_ += c;
    } else {
      return Error{"an authentication line held byte " +
                   std::to_string(static_cast<unsigned char>(c)) +
                   " (only printable ASCII is taken)"};
    }
  }
  return ok_status();
}

// One line, as bus_socket_auth_verify_server takes it, in its order.
Status AuthExchange::take_line(std::string_view line) {
  // What follows the mechanism or DATA: nothing, or a space and the argument.
  auto argument_taken = [&](std::size_t prefix, Mechanism mechanism) {
    if (line.size() == prefix) return true;  // answered DATA (after AUTH) or OK (after DATA)
    const std::string_view argument = line.substr(prefix + 1);
    return mechanism == Mechanism::External ? certainly_a_uid(argument)
                                            : certainly_a_trace(argument);
  };
  if (line_begins(line, kAuthAnonymous) || line_begins(line, kAuthExternal)) {
    const bool anonymous = line_begins(line, kAuthAnonymous);
    const Mechanism mechanism = anonymous ? Mechanism::Anonymous : Mechanism::External;
    if (!argument_taken(anonymous ? kAuthAnonymous.size() : kAuthExternal.size(), mechanism))
      return Error{"its " + std::string(anonymous ? kAuthAnonymous : kAuthExternal) +
                   " argument is not one sd-bus certainly takes: " + quoted(line)};
    mechanism_ = mechanism;
    return ok_status();
  }
  if (line_begins(line, "AUTH")) return ok_status();  // REJECTED with the mechanisms; no change
  if (line == "CANCEL" || line_begins(line, "ERROR")) {
    mechanism_ = Mechanism::None;  // REJECTED; a new AUTH may follow
    return ok_status();
  }
  if (line == "BEGIN") {
    if (mechanism_ == Mechanism::None)
      return Error{"it sent BEGIN before sd-bus had accepted an AUTH"};
    over_ = true;
    return ok_status();
  }
  if (line_begins(line, kData) && mechanism_ != Mechanism::None &&
      !argument_taken(kData.size(), mechanism_))
    return Error{"its DATA is not one sd-bus certainly takes: " + quoted(line)};
  // DATA taken (OK) or without a mechanism (ERROR), NEGOTIATE_UNIX_FD (ERROR: the proxy passes
  // no descriptors), anything else (ERROR): the mechanism stays as it was.
  return ok_status();
}

}  // namespace xpu::api_proxy
