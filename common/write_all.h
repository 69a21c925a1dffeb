// Writes a whole buffer to a descriptor, through short writes and EINTR.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

#include "common/result.h"

namespace xpu {

// The error names the cause (strerror), not the file: the caller knows which file it was.
inline Status write_all(int fd, std::string_view content) {
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error{std::strerror(errno)};
    content.remove_prefix(static_cast<std::size_t>(n));
  }
  return ok_status();
}

}  // namespace xpu
