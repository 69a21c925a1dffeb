#include "xpud-api-proxy/inbound_filter.h"

#include <algorithm>

#include "common/names.h"

namespace xpu::api_proxy {
namespace {

constexpr std::size_t kFixedHeaderBytes = 16;
constexpr std::uint8_t kMethodCall = 1;
constexpr std::uint8_t kLastKnownType = 4;  // signal
constexpr std::uint8_t kMajorVersion = 1;

// Header field codes and their types (specification, "Header Fields").
constexpr std::uint8_t kFieldPath = 1;
constexpr std::uint8_t kFieldInterface = 2;
constexpr std::uint8_t kFieldMember = 3;
constexpr std::uint8_t kFieldDestination = 6;
constexpr std::uint8_t kFieldSignature = 8;

std::uint32_t read_u32(std::string_view bytes, std::size_t at, bool little_endian) {
  std::uint32_t value = 0;
  for (int i = 0; i < 4; ++i) {
    const auto byte = static_cast<std::uint8_t>(bytes[at + (little_endian ? 3 - i : i)]);
    value = (value << 8) | byte;
  }
  return value;
}

void put_u32(std::string& out, std::size_t at, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

void append_u32(std::string& out, std::uint32_t value) {
  out.append(4, '\0');
  put_u32(out, out.size() - 4, value);
}

void pad_to(std::string& out, std::size_t alignment) {
  out.append((alignment - out.size() % alignment) % alignment, '\0');
}

// One header field of a string-like type ('s' or 'o'): a struct (8-aligned) of the code and a
// variant holding the string.
void append_string_field(std::string& out, std::uint8_t code, char type, std::string_view text) {
  pad_to(out, 8);
  out += static_cast<char>(code);
  out += '\x01';
  out += type;
  out += '\0';
  pad_to(out, 4);
  append_u32(out, static_cast<std::uint32_t>(text.size()));
  out.append(text);
  out += '\0';
}

}  // namespace

std::string too_large_call(std::uint32_t serial, std::uint8_t flags, std::uint64_t size) {
  std::string message;
  message += 'l';
  message += static_cast<char>(kMethodCall);
  message += static_cast<char>(flags);
  message += static_cast<char>(kMajorVersion);
  append_u32(message, 8);  // body: one uint64
  append_u32(message, serial);
  append_u32(message, 0);  // header fields' length, set below
  append_string_field(message, kFieldPath, 'o', kRefusedPath);
  append_string_field(message, kFieldInterface, 's', kRefusedInterface);
  append_string_field(message, kFieldMember, 's', kTooLargeMember);
  append_string_field(message, kFieldDestination, 's', names::bus::kDriverName);
  pad_to(message, 8);
  message += static_cast<char>(kFieldSignature);
  message += '\x01';
  message += 'g';
  message += '\0';
  message += '\x01';  // the signature "t": its length, itself, NUL
  message += 't';
  message += '\0';
  put_u32(message, 12, static_cast<std::uint32_t>(message.size() - kFixedHeaderBytes));
  pad_to(message, 8);
  for (int i = 0; i < 8; ++i) message += static_cast<char>((size >> (8 * i)) & 0xff);
  return message;
}

InboundFilter::InboundFilter(std::uint64_t max_message_bytes, std::size_t max_auth_bytes)
    : max_message_bytes_(std::max<std::uint64_t>(max_message_bytes, kFixedHeaderBytes)),
      auth_(max_auth_bytes) {}

Status InboundFilter::feed(std::string_view data, std::string& out) {
  while (!data.empty()) {
    switch (phase_) {
      case Phase::Authentication:
        if (auto status = auth_.feed(data, out); !status) return status;
        if (auth_.over()) phase_ = Phase::Header;
        break;
      case Phase::Header: {
        const std::size_t take = std::min(kFixedHeaderBytes - header_.size(), data.size());
        header_.append(data.substr(0, take));
        data.remove_prefix(take);
        if (header_.size() == kFixedHeaderBytes) {
          if (auto status = take_header(out); !status) return status;
        }
        break;
      }
      case Phase::Passing:
      case Phase::Dropping: {
        const auto take =
            static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, data.size()));
        if (phase_ == Phase::Passing) out.append(data.substr(0, take));
        data.remove_prefix(take);
        remaining_ -= take;
        if (remaining_ == 0) phase_ = Phase::Header;
        break;
      }
    }
  }
  return ok_status();
}

Status InboundFilter::take_header(std::string& out) {
  const char mark = header_[0];
  if (mark != 'l' && mark != 'B')
    return Error{"it sent no D-Bus message (endianness mark " +
                 std::to_string(static_cast<unsigned char>(mark)) + ")"};
  const bool little = mark == 'l';
  const auto type = static_cast<std::uint8_t>(header_[1]);
  const auto flags = static_cast<std::uint8_t>(header_[2]);
  if (type == 0 || type > kLastKnownType)
    return Error{"it sent a message of unknown type " + std::to_string(type)};
  if (static_cast<std::uint8_t>(header_[3]) != kMajorVersion)
    return Error{"it sent a message of protocol version " +
                 std::to_string(static_cast<unsigned char>(header_[3]))};
  const std::uint64_t body = read_u32(header_, 4, little);
  const std::uint32_t serial = read_u32(header_, 8, little);
  const std::uint64_t fields = read_u32(header_, 12, little);
  if (serial == 0) return Error{"it sent a message with serial 0"};
  const std::uint64_t size = kFixedHeaderBytes + fields + (8 - fields % 8) % 8 + body;
  remaining_ = size - kFixedHeaderBytes;
  if (size <= max_message_bytes_) {
    out.append(header_);
    phase_ = remaining_ == 0 ? Phase::Header : Phase::Passing;
  } else {
    ++refused_;
    if (type == kMethodCall) out.append(too_large_call(serial, flags, size));
    phase_ = Phase::Dropping;
  }
  header_.clear();
  return ok_status();
}

}  // namespace xpu::api_proxy
