#include "xpud/backends/device_uuid.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <vector>

namespace xpud {
namespace {

std::uint32_t load_big_endian(const std::uint8_t* bytes) {
  return std::uint32_t{bytes[0]} << 24 | std::uint32_t{bytes[1]} << 16 |
         std::uint32_t{bytes[2]} << 8 | std::uint32_t{bytes[3]};
}

void compress(std::array<std::uint32_t, 5>& state, const std::uint8_t* block) {
  std::array<std::uint32_t, 80> w{};
  for (int t = 0; t < 16; ++t) w[t] = load_big_endian(block + 4 * t);
  for (int t = 16; t < 80; ++t) w[t] = std::rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
  auto [a, b, c, d, e] = state;
  for (int t = 0; t < 80; ++t) {
    std::uint32_t f = 0, k = 0;
    if (t < 20) {
      f = (b & c) | (~b & d);
      k = 0x5a827999;
    } else if (t < 40) {
      f = b ^ c ^ d;
      k = 0x6ed9eba1;
    } else if (t < 60) {
      f = (b & c) | (b & d) | (c & d);
      k = 0x8f1bbcdc;
    } else {
      f = b ^ c ^ d;
      k = 0xca62c1d6;
    }
    std::uint32_t temp = std::rotl(a, 5) + f + e + k + w[t];
    e = d;
    d = c;
    c = std::rotl(b, 30);
    b = a;
    a = temp;
  }
  state[0] += a;
  state[1] += b;
  state[2] += c;
  state[3] += d;
  state[4] += e;
}

}  // namespace

Sha1Digest sha1(std::string_view data) {
  std::array<std::uint32_t, 5> state = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
  // Message, then 0x80, zeros up to 56 mod 64, then the bit length as a 64-bit big-endian value.
  std::vector<std::uint8_t> message(data.begin(), data.end());
  const std::uint64_t bit_length = std::uint64_t{data.size()} * 8;
  message.push_back(0x80);
  while (message.size() % 64 != 56) message.push_back(0);
  for (int shift = 56; shift >= 0; shift -= 8)
    message.push_back(static_cast<std::uint8_t>(bit_length >> shift));
  for (std::size_t offset = 0; offset < message.size(); offset += 64)
    compress(state, message.data() + offset);

  Sha1Digest digest{};
  for (std::size_t i = 0; i < state.size(); ++i)
    for (std::size_t j = 0; j < 4; ++j)
      digest[4 * i + j] = static_cast<std::uint8_t>(state[i] >> (24 - 8 * j));
  return digest;
}

std::string uuid_v5(const UuidBytes& name_space, std::string_view name) {
  std::string input(name_space.begin(), name_space.end());
  input.append(name);
  Sha1Digest digest = sha1(input);
  UuidBytes bytes{};
  std::copy_n(digest.begin(), bytes.size(), bytes.begin());
  bytes[6] = static_cast<std::uint8_t>((bytes[6] & 0x0f) | 0x50);  // version 5
  bytes[8] = static_cast<std::uint8_t>((bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant
  std::string text;
  text.reserve(36);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", bytes[i]);
    text += hex;
  }
  return text;
}

std::string derived_device_uuid(std::string_view pci_bus_id, std::string_view pci_model,
                                unsigned chip) {
  std::string name(pci_bus_id);
  name += '/';
  name += pci_model;
  name += '/';
  name += std::to_string(chip);
  return uuid_v5(kDeviceUuidNamespace, name);
}

bool is_usable_device_uuid(std::string_view uuid) {
  if (uuid.empty() || uuid.size() > kMaxDeviceUuidLength) return false;
  for (char c : uuid) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

}  // namespace xpud
