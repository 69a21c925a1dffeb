#include "xpud/requests/method_arguments.h"

#include <algorithm>

#include "common/instance_owner.h"
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

std::optional<ArgumentRefusal> check_instance_id(std::string_view id) {
  constexpr std::size_t kMaxLength = 12;  // XPUML_CXPU_INST_ID_LEN of the vendor's header
  if (id.empty() || id.size() > kMaxLength)
    return ArgumentRefusal{names::kErrorInvalidArgument,
                           "instance id must have 1 to " + std::to_string(kMaxLength) +
                               " characters, got " + std::to_string(id.size())};
  for (char c : id) {
    const bool allowed = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                         (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (!allowed)
      return ArgumentRefusal{names::kErrorInvalidArgument,
                             "instance id may hold only A-Z, a-z, 0-9, '_', '.' and '-'"};
  }
  return std::nullopt;
}

std::optional<ArgumentRefusal> check_instance_owner(std::string_view owner) {
  if (owner.empty() || names::is_instance_owner(owner)) return std::nullopt;
  return ArgumentRefusal{names::kErrorInvalidArgument,
                         "owner must be empty or <namespace>/<pod>/<container> (Kubernetes "
                         "names: a-z, 0-9, '-', and '.' in the pod's)"};
}

std::optional<ArgumentRefusal> check_instance_share(std::string_view share) {
  const bool valid = !share.empty() && share.size() <= kMaxInstanceShareBytes &&
                     std::all_of(share.begin(), share.end(), [](char c) {
                       return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                              (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
                              c == '/';
                     });
  if (valid) return std::nullopt;
  return ArgumentRefusal{names::kErrorInvalidArgument,
                         "share must have 1 to " + std::to_string(kMaxInstanceShareBytes) +
                             " of A-Z, a-z, 0-9, '-', '.', '_' and '/' (<claim uid>/<share id>)"};
}

std::optional<ArgumentRefusal> check_instance_memory_limit(std::uint64_t limit_bytes,
                                                           std::uint64_t card_memory_bytes) {
  if (limit_bytes == 0)
    return ArgumentRefusal{names::kErrorInvalidArgument, "memory limit must be at least 1 byte"};
  if (card_memory_bytes != 0 && limit_bytes > card_memory_bytes)
    return ArgumentRefusal{names::kErrorInvalidArgument,
                           "memory limit " + std::to_string(limit_bytes) +
                               " bytes is above the card's " + std::to_string(card_memory_bytes)};
  if (card_memory_bytes == 0 && limit_bytes == ~std::uint64_t{0})
    return ArgumentRefusal{names::kErrorInvalidArgument,
                           "memory limit must be below 2^64-1, which the library takes for none"};
  return std::nullopt;
}

}  // namespace xpud
