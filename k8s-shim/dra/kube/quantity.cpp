#include "k8s-shim/dra/kube/quantity.h"

#include <array>
#include <cctype>
#include <cstdlib>
#include <optional>

namespace shim::dra {

namespace {

using Wide = unsigned __int128;

// Intermediate values stay below this so that one more multiplication by 1024 or 10 cannot wrap
// the 128-bit integer; anything that large is far beyond int64 anyway (unless a later division
// brings it back, which only absurdly long inputs need).
constexpr Wide kWideLimit = Wide{1} << 116;

// Mantissa digits kept: 36 decimal digits fit well below kWideLimit.
constexpr std::size_t kMaxDigits = 36;
// An exponent beyond this cannot produce a non-zero int64 from at most kMaxDigits digits.
constexpr int kMaxExponent = 64;

struct Suffix {
  std::string_view text;
  int binary_exponent;   // power of 2
  int decimal_exponent;  // power of 10
};

constexpr std::array kSuffixes = {
    Suffix{"Ki", 10, 0}, Suffix{"Mi", 20, 0}, Suffix{"Gi", 30, 0}, Suffix{"Ti", 40, 0},
    Suffix{"Pi", 50, 0}, Suffix{"Ei", 60, 0}, Suffix{"n", 0, -9},  Suffix{"u", 0, -6},
    Suffix{"m", 0, -3},  Suffix{"k", 0, 3},   Suffix{"M", 0, 6},   Suffix{"G", 0, 9},
    Suffix{"T", 0, 12},  Suffix{"P", 0, 15},  Suffix{"E", 0, 18},
};

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

xpu::Error bad(std::string_view text, std::string_view why) {
  return xpu::Error{"quantity \"" + std::string(text) + "\": " + std::string(why)};
}

}  // namespace

xpu::Result<std::int64_t> parse_quantity(std::string_view text) {
  std::string_view rest = text;
  bool negative = false;
  if (!rest.empty() && (rest.front() == '+' || rest.front() == '-')) {
    negative = rest.front() == '-';
    rest.remove_prefix(1);
  }

  Wide mantissa = 0;
  std::size_t significant_digits = 0;
  std::size_t digits = 0;
  int decimal_exponent = 0;
  auto take_digit = [&](char c) -> bool {
    ++digits;
    if (mantissa == 0 && c == '0') return true;  // leading zeros carry no size
    if (++significant_digits > kMaxDigits) return false;
    mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
    return true;
  };
  while (!rest.empty() && is_digit(rest.front())) {
    if (!take_digit(rest.front())) return bad(text, "too many digits");
    rest.remove_prefix(1);
  }
  if (!rest.empty() && rest.front() == '.') {
    rest.remove_prefix(1);
    while (!rest.empty() && is_digit(rest.front())) {
      if (!take_digit(rest.front())) return bad(text, "too many digits");
      --decimal_exponent;
      rest.remove_prefix(1);
    }
  }
  if (digits == 0) return bad(text, "no digits");

  int binary_exponent = 0;
  if (!rest.empty() && (rest.front() == 'e' || rest.front() == 'E') && rest.size() > 1 &&
      (is_digit(rest[1]) || rest[1] == '+' || rest[1] == '-')) {
    // "1e3" (and "1E3"): a lone "E" is the exa suffix, handled below.
    rest.remove_prefix(1);
    bool exponent_negative = false;
    if (rest.front() == '+' || rest.front() == '-') {
      exponent_negative = rest.front() == '-';
      rest.remove_prefix(1);
    }
    if (rest.empty()) return bad(text, "exponent without digits");
    int exponent = 0;
    for (char c : rest) {
      if (!is_digit(c)) return bad(text, "exponent is not a number");
      exponent = exponent * 10 + (c - '0');
      if (exponent > kMaxExponent) return bad(text, "exponent out of range");
    }
    rest = {};
    decimal_exponent += exponent_negative ? -exponent : exponent;
  } else if (!rest.empty()) {
    const Suffix* found = nullptr;
    for (const Suffix& suffix : kSuffixes)
      if (rest == suffix.text) found = &suffix;
    if (!found) return bad(text, "unknown suffix \"" + std::string(rest) + "\"");
    binary_exponent = found->binary_exponent;
    decimal_exponent += found->decimal_exponent;
  }

  // Multiply first, divide last: "1.5Gi" is 15 * 2^30 / 10, which only the end result makes whole.
  if (mantissa != 0) {
    for (int i = 0; i < binary_exponent; ++i) {
      mantissa <<= 1;
      if (mantissa >= kWideLimit) return bad(text, "out of range");
    }
    for (int i = 0; i < decimal_exponent; ++i) {
      mantissa *= 10;
      if (mantissa >= kWideLimit) return bad(text, "out of range");
    }
    for (int i = 0; i > decimal_exponent; --i) {
      if (mantissa % 10 != 0) return bad(text, "not a whole number");
      mantissa /= 10;
    }
  }
  const Wide max_magnitude =
      negative ? Wide{static_cast<std::uint64_t>(INT64_MAX)} + 1 : Wide{INT64_MAX};
  if (mantissa > max_magnitude) return bad(text, "out of range");
  if (negative) {
    // -(2^63) is representable, but not as the negation of an int64.
    if (mantissa == Wide{static_cast<std::uint64_t>(INT64_MAX)} + 1) return INT64_MIN;
    return -static_cast<std::int64_t>(mantissa);
  }
  return static_cast<std::int64_t>(mantissa);
}

std::string format_quantity(std::int64_t value) {
  return std::to_string(value);
}

}  // namespace shim::dra
