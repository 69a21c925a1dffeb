#include "xpud/backends/xpuml/derived_uuid.h"

#include <cstdint>
#include <cstdio>

namespace xpud::xpuml {
namespace {

// FNV-1a: stable by definition (unlike std::hash), with a seed so two passes give two
// independent 64-bit halves.
std::uint64_t fnv1a(std::string_view text, std::uint64_t seed) {
  std::uint64_t hash = 0xcbf29ce484222325ULL ^ seed;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

// splitmix64 finaliser: spreads FNV's weak low bits over the whole word.
std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace

std::string derive_uuid(std::string_view source) {
  std::uint64_t high = mix(fnv1a(source, 0x6b756e6c756e0001ULL));
  std::uint64_t low = mix(fnv1a(source, 0x6b756e6c756e0002ULL));
  high = (high & ~0xf000ULL) | 0x8000ULL;          // version 8
  low = (low & ~(0x3ULL << 62)) | (0x2ULL << 62);  // RFC variant
  char text[40];
  std::snprintf(text, sizeof text, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(high >> 32),
                static_cast<unsigned>((high >> 16) & 0xffff), static_cast<unsigned>(high & 0xffff),
                static_cast<unsigned>(low >> 48),
                static_cast<unsigned long long>(low & 0xffffffffffffULL));
  return text;
}

bool is_usable_uuid(std::string_view uuid) {
  if (uuid.empty() || uuid.size() > kMaxUuidLength) return false;
  for (char c : uuid) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

}  // namespace xpud::xpuml
