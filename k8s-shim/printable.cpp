#include "k8s-shim/printable.h"

namespace shim {

std::string printable_excerpt(std::string_view text, std::size_t max_chars) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (char c : text.substr(0, max_chars)) {
    auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && c != '"' && c != '\\') {
      out += c;
    } else {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    }
  }
  if (text.size() > max_chars) out += "...";
  return out;
}

std::string truncate_utf8(std::string text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t cut = max_bytes;
  // Back off continuation bytes (10xxxxxx) to the start of the sequence the cut would split.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  return text;
}

}  // namespace shim
