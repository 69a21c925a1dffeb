// Untrusted text (file contents, environment values, IDs in the kubelet's requests) quoted into a
// log line or an error: cut short and with every non-printable byte escaped, so it cannot forge
// or split log lines.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace shim {

std::string printable_excerpt(std::string_view text, std::size_t max_chars = 80);

}  // namespace shim
