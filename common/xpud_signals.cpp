#include "common/xpud_signals.h"

#include <algorithm>

#include "common/names.h"

namespace xpu {
namespace {

bool in_xpud_tree(std::string_view path) {
  const std::string_view root = names::kManagerPath;
  return path == root || (path.size() > root.size() && path.substr(0, root.size()) == root &&
                          path[root.size()] == '/');
}

bool is_xpud_signal(std::string_view interface, std::string_view member) {
  return std::any_of(names::signals::kXpud.begin(), names::signals::kXpud.end(),
                     [&](const names::signals::Signal& s) {
                       return s.interface == interface && s.member == member;
                     });
}

}  // namespace

std::optional<std::string> why_not_driver_owner_change(const SignalOrigin& signal) {
  if (signal.sender != names::bus::kDriverName) return "not sent by the bus driver";
  if (!signal.destination.empty()) return "addressed to one connection, not broadcast";
  if (signal.path != names::bus::kDriverPath || signal.interface != names::bus::kDriverName ||
      signal.member != names::bus::kNameOwnerChanged)
    return "not the driver's NameOwnerChanged";
  return std::nullopt;
}

std::optional<std::string> why_not_xpud_signal(const SignalOrigin& signal,
                                               std::string_view xpud_owner) {
  if (xpud_owner.empty()) return "no one owns " + std::string(names::kBusName);
  if (signal.sender != xpud_owner)
    return "its sender does not own " + std::string(names::kBusName) + " (" +
           std::string(xpud_owner) + " does)";
  if (!signal.destination.empty()) return "addressed to one connection, not broadcast";
  if (!is_xpud_signal(signal.interface, signal.member)) return "not a signal of xpud's API";
  if (!in_xpud_tree(signal.path)) return "not from one of xpud's objects";
  return std::nullopt;
}

std::string describe_signal(const SignalOrigin& signal) {
  auto or_none = [](std::string_view text) {
    return text.empty() ? std::string("(none)") : std::string(text);
  };
  return or_none(signal.interface) + "." + or_none(signal.member) + " from " +
         or_none(signal.sender) + " to " +
         (signal.destination.empty() ? std::string("all") : std::string(signal.destination));
}

}  // namespace xpu
