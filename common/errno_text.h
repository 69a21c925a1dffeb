#pragma once

#include <cstring>
#include <string>

namespace xpu {

// What an errno value means, for an error message: "No such file or directory".
inline std::string errno_text(int error) {
  return std::strerror(error);
}

}  // namespace xpu
