// FNV-1a, the one hash the project writes itself: for names and checksums that must stay the
// same from build to build and machine to machine (std::hash promises neither). Not for
// anything an attacker may choose to collide. Offset bases and primes: the FNV authors'
// reference, http://www.isthe.com/chongo/tech/comp/fnv/.
#pragma once

#include <cstdint>
#include <string_view>

namespace xpu {

namespace fnv1a_detail {
template <typename Hash>
constexpr Hash fnv1a(std::string_view text, Hash offset_basis, Hash prime) {
  Hash hash = offset_basis;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= prime;
  }
  return hash;
}
}  // namespace fnv1a_detail

constexpr std::uint32_t fnv1a_32(std::string_view text) {
  return fnv1a_detail::fnv1a<std::uint32_t>(text, 2166136261u, 16777619u);
}

constexpr std::uint64_t fnv1a_64(std::string_view text) {
  return fnv1a_detail::fnv1a<std::uint64_t>(text, 0xcbf29ce484222325ull, 0x100000001b3ull);
}

}  // namespace xpu
