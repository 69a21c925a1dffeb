// What a client of the read-only API socket may ask for. Pure: no bus, no state beyond the
// arguments, so the whole allow-list is unit-tested line by line.
//
// The proxy connects to the system bus as an unprivileged user, so xpud's bus policy refuses it
// every root-only method anyway; this list is the first of two locks, and the one that keeps
// every other service on the host (systemd, logind, ...) out of reach.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "common/names.h"

namespace xpu::api_proxy {

// Which of the proxy's sockets a client came in on.
enum class ApiSocket {
  ReadOnly,  // /run/xpud-api/bus.sock, open to every local user and mounted into the shim's pods
  // /run/xpud-api-sriov/bus.sock, root's only, mounted into the device plugin's pod alone when the
  // chart's devicePlugin.reconfigVxpu is on: the reads, and the one write
  Sriov,
};

enum class Route {
  BusDriver,  // org.freedesktop.DBus itself: answered by the proxy (Hello, AddMatch, ...)
  Forward,    // a read of xpud's API: forwarded to xpud on the system bus
  // The one write: Manager.ConfigureVirtualFunctions, on the SR-IOV socket only, forwarded only
  // when the host allows the cluster to change SR-IOV counts (xpud's ClusterReconfigureAllowed,
  // asked at each call) and the client is root (cluster_write_refusal says which).
  ForwardIfHostAllows,
  Deny,  // everything else: AccessDenied
};

struct CallRoute {
  Route route = Route::Deny;
  std::string reason;  // for Deny: the text of the AccessDenied error
};

inline constexpr std::string_view kDriverName = names::bus::kDriverName;

// `xpud_owner` is the unique name currently owning xpud's bus name ("" when none): a client may
// address xpud by either name. `socket` is the one the call came in on.
CallRoute route_call(std::string_view destination, std::string_view interface,
                     std::string_view member, std::string_view xpud_owner, ApiSocket socket);

// Why a ForwardIfHostAllows call is refused, or nullopt when it may go to xpud: the host's
// [sriov] allow_cluster_reconfigure (as xpud reports it) must be true, and the client must be
// uid 0 (the shim's pods; not any local user of the host, to whom the socket is open too).
// `client_uid` is nullopt when the socket did not say.
std::optional<std::string> cluster_write_refusal(bool host_allows, std::optional<uid_t> client_uid);

// The bus-driver methods the proxy answers itself; everything else on org.freedesktop.DBus
// (RequestName, GetConnectionCredentials, BecomeMonitor, ...) is denied.
bool is_answered_driver_method(std::string_view interface, std::string_view member);

}  // namespace xpu::api_proxy
