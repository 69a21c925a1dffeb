#include "xpud-api-proxy/api_filter.h"

#include <array>
#include <utility>

#include "common/names.h"

namespace xpu::api_proxy {
namespace {

using Call = std::pair<std::string_view, std::string_view>;  // interface, member

// xpud's read-only API: properties, the object tree, the Manager reads, introspection.
// Properties.Set and every Simulator method stay out; so does anything added to xpud later
// until it is listed here on purpose.
constexpr std::array kXpudReads = {
    Call{names::bus::kPropertiesInterface, "Get"},
    Call{names::bus::kPropertiesInterface, "GetAll"},
    Call{names::bus::kObjectManagerInterface, "GetManagedObjects"},
    Call{names::bus::kIntrospectableInterface, "Introspect"},
    Call{names::bus::kPeerInterface, "Ping"},
    Call{names::kManagerInterface, names::member::kListDevices},
    Call{names::kManagerInterface, names::member::kGetMetrics},
    Call{names::kManagerInterface, names::member::kGetProcesses},
    // Which container holds which share of a card, and its bound: the exporter's grants.
    // CreateInstance and DestroyInstance are root's on the host, never the cluster's.
    Call{names::kManagerInterface, names::member::kListInstances},
};

// What sd-bus, libdbus and busctl clients need from a bus to connect and follow a name.
constexpr std::array kDriverAnswers = {
    Call{names::bus::kDriverName, "Hello"},
    Call{names::bus::kDriverName, "AddMatch"},
    Call{names::bus::kDriverName, "RemoveMatch"},
    Call{names::bus::kDriverName, "GetNameOwner"},
    Call{names::bus::kDriverName, "NameHasOwner"},
    Call{names::bus::kDriverName, "ListNames"},
    Call{names::bus::kDriverName, "ListActivatableNames"},
    Call{names::bus::kDriverName, "GetId"},
    Call{names::bus::kPeerInterface, "Ping"},
};

template <std::size_t N>
bool listed(const std::array<Call, N>& list, std::string_view interface, std::string_view member) {
  for (const auto& [i, m] : list)
    if (i == interface && m == member) return true;
  return false;
}

std::string describe(std::string_view destination, std::string_view interface,
                     std::string_view member) {
  return std::string(interface.empty() ? "(no interface)" : interface) + "." + std::string(member) +
         " on " + std::string(destination.empty() ? "(no destination)" : destination);
}

}  // namespace

std::optional<std::string> cluster_write_refusal(bool host_allows,
                                                 std::optional<uid_t> client_uid) {
  const std::string call = std::string(names::kManagerInterface) + "." +
                           std::string(names::member::kConfigureVirtualFunctions);
  if (!host_allows)
    return call +
           " is not allowed from the cluster on this host: xpud's [sriov] "
           "allow_cluster_reconfigure is false (ClusterReconfigureAllowed)";
  if (!client_uid || *client_uid != 0)
    return call +
           " through xpud's API socket is for clients running as uid 0 (the device "
           "plugin), not uid " +
           (client_uid ? std::to_string(*client_uid) : "unknown");
  return std::nullopt;
}

bool is_answered_driver_method(std::string_view interface, std::string_view member) {
  return listed(kDriverAnswers, interface, member);
}

CallRoute route_call(std::string_view destination, std::string_view interface,
                     std::string_view member, std::string_view xpud_owner, ApiSocket socket) {
  if (destination == kDriverName) {
    if (is_answered_driver_method(interface, member)) return {Route::BusDriver, {}};
    return {Route::Deny, describe(destination, interface, member) +
                             " is not available on xpud's read-only API socket"};
  }
  const bool to_xpud =
      destination == names::kBusName || (!xpud_owner.empty() && destination == xpud_owner);
  if (!to_xpud)
    return {Route::Deny, "only " + std::string(names::kBusName) +
                             " is reachable on xpud's read-only API socket, not " +
                             std::string(destination.empty() ? "(no destination)" : destination)};
  if (listed(kXpudReads, interface, member)) return {Route::Forward, {}};
  if (interface == names::kManagerInterface &&
      member == names::member::kConfigureVirtualFunctions) {
    if (socket == ApiSocket::Sriov) return {Route::ForwardIfHostAllows, {}};
    return {Route::Deny, describe(destination, interface, member) +
                             " is not served on xpud's read-only API socket: the device plugin "
                             "reaches it on the SR-IOV socket (/run/xpud-api-sriov/bus.sock, the "
                             "chart's devicePlugin.reconfigVxpu)"};
  }
  return {Route::Deny,
          describe(destination, interface, member) + " is not part of xpud's read-only API"};
}

}  // namespace xpu::api_proxy
