// The D-Bus error names the proxy answers with, as the C strings sd-bus takes.
#pragma once

#include <string_view>

#include "common/names.h"

namespace xpu::api_proxy::bus_errors {

// names.h's views are of string literals, so the literal's NUL follows each.
constexpr bool nul_terminated(std::string_view literal) {
  return literal.data()[literal.size()] == '\0';
}
static_assert(nul_terminated(names::bus::kErrorAccessDenied) &&
              nul_terminated(names::bus::kErrorLimitsExceeded) &&
              nul_terminated(names::bus::kErrorNameHasNoOwner) &&
              nul_terminated(names::bus::kErrorFailed));

inline constexpr const char* kAccessDenied = names::bus::kErrorAccessDenied.data();
inline constexpr const char* kLimitsExceeded = names::bus::kErrorLimitsExceeded.data();
inline constexpr const char* kNameHasNoOwner = names::bus::kErrorNameHasNoOwner.data();
inline constexpr const char* kFailed = names::bus::kErrorFailed.data();

}  // namespace xpu::api_proxy::bus_errors
