#include "xpud/method_arguments.h"

#include "common/names.h"

namespace xpud {

namespace names = xpu::names;

std::optional<ArgumentRefusal> check_set_health_arguments(std::string_view health,
                                                          std::string_view reason) {
  if (health != names::kHealthy && health != names::kUnhealthy)
    return ArgumentRefusal{
        names::kErrorInvalidArgument,
        "health must be 'Healthy' or 'Unhealthy', got '" + std::string(health) + "'"};
  if (reason.size() > kMaxInjectedReasonBytes)
    return ArgumentRefusal{
        names::kErrorInvalidArgument,
        "reason longer than " + std::to_string(kMaxInjectedReasonBytes) + " bytes"};
  return std::nullopt;
}

}  // namespace xpud
