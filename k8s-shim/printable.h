// Untrusted text (file contents, environment values, IDs in the kubelet's requests) quoted into a
// log line or an error: cut short and with every non-printable byte escaped, so it cannot forge
// or split log lines.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace shim {

std::string printable_excerpt(std::string_view text, std::size_t max_chars = 80);

// `text` cut to at most `max_bytes` without splitting a UTF-8 sequence, for fields with a byte
// limit that must stay valid UTF-8 (protobuf strings, whose decoder fails the whole message
// otherwise; an API object's condition message).
std::string truncate_utf8(std::string text, std::size_t max_bytes);

}  // namespace shim
