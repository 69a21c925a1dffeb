// The proxy's allow-list, call by call: what a container may ask of the host through it.
#include "xpud-api-proxy/api_filter.h"

#include <gtest/gtest.h>

namespace {

using xpu::api_proxy::Route;
using xpu::api_proxy::route_call;

constexpr const char* kXpud = "com.kunlunxin.xpud1";
constexpr const char* kOwner = ":1.42";
constexpr auto kReadOnly = xpu::api_proxy::ApiSocket::ReadOnly;
constexpr auto kSriov = xpu::api_proxy::ApiSocket::Sriov;

TEST(ApiFilter, XpudReadsAreForwarded) {
  EXPECT_EQ(
      route_call(kXpud, "com.kunlunxin.xpud1.Manager", "ListDevices", kOwner, kReadOnly).route,
      Route::Forward);
  EXPECT_EQ(route_call(kXpud, "com.kunlunxin.xpud1.Manager", "GetMetrics", kOwner, kReadOnly).route,
            Route::Forward);
  EXPECT_EQ(
      route_call(kXpud, "com.kunlunxin.xpud1.Manager", "GetProcesses", kOwner, kReadOnly).route,
      Route::Forward);
  EXPECT_EQ(
      route_call(kXpud, "com.kunlunxin.xpud1.Manager", "ListInstances", kOwner, kReadOnly).route,
      Route::Forward);
  EXPECT_EQ(route_call(kXpud, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", kOwner,
                       kReadOnly)
                .route,
            Route::Forward);
  EXPECT_EQ(route_call(kXpud, "org.freedesktop.DBus.Properties", "Get", kOwner, kReadOnly).route,
            Route::Forward);
  EXPECT_EQ(route_call(kXpud, "org.freedesktop.DBus.Properties", "GetAll", kOwner, kReadOnly).route,
            Route::Forward);
  EXPECT_EQ(
      route_call(kXpud, "org.freedesktop.DBus.Introspectable", "Introspect", kOwner, kReadOnly)
          .route,
      Route::Forward);
  // xpud addressed by its unique name is still xpud.
  EXPECT_EQ(
      route_call(kOwner, "com.kunlunxin.xpud1.Manager", "GetMetrics", kOwner, kReadOnly).route,
      Route::Forward);
}

TEST(ApiFilter, XpudWritesAreDenied) {
  auto set_health =
      route_call(kXpud, "com.kunlunxin.xpud1.Simulator", "SetHealth", kOwner, kReadOnly);
  EXPECT_EQ(set_health.route, Route::Deny);
  EXPECT_EQ(set_health.reason,
            "com.kunlunxin.xpud1.Simulator.SetHealth on com.kunlunxin.xpud1 is not part of xpud's "
            "read-only API");
  EXPECT_EQ(
      route_call(kXpud, "com.kunlunxin.xpud1.Simulator", "SetMetric", kOwner, kReadOnly).route,
      Route::Deny);
  EXPECT_EQ(route_call(kXpud, "org.freedesktop.DBus.Properties", "Set", kOwner, kReadOnly).route,
            Route::Deny);
  // cXPU instances are root's on the host: neither socket forwards them.
  for (auto socket : {kReadOnly, kSriov}) {
    EXPECT_EQ(
        route_call(kXpud, "com.kunlunxin.xpud1.Manager", "CreateInstance", kOwner, socket).route,
        Route::Deny);
    EXPECT_EQ(
        route_call(kXpud, "com.kunlunxin.xpud1.Manager", "DestroyInstance", kOwner, socket).route,
        Route::Deny);
  }
  // Moving cards to vfio-pci and back is root's on the host: neither socket forwards it. The
  // list of functions on vfio-pci is a property, read like any other.
  for (auto socket : {kReadOnly, kSriov}) {
    for (const char* member : {"Bind", "Unbind"}) {
      auto call = route_call(kXpud, "com.kunlunxin.xpud1.Vfio", member, kOwner, socket);
      EXPECT_EQ(call.route, Route::Deny) << member;
    }
  }
  EXPECT_EQ(route_call(kXpud, "com.kunlunxin.xpud1.Vfio", "Bind", kOwner, kReadOnly).reason,
            "com.kunlunxin.xpud1.Vfio.Bind on com.kunlunxin.xpud1 is not part of xpud's "
            "read-only API");
  // Resetting a card is root's on the host: neither socket forwards it.
  for (auto socket : {kReadOnly, kSriov})
    EXPECT_EQ(route_call(kXpud, "com.kunlunxin.xpud1.Manager", "ResetDevice", kOwner, socket).route,
              Route::Deny);
  // A method added to xpud later is denied until someone lists it here on purpose.
  EXPECT_EQ(
      route_call(kXpud, "com.kunlunxin.xpud1.Manager", "FormatDevice", kOwner, kReadOnly).route,
      Route::Deny);
  // No interface: the bus would pick one by member name; here it is simply refused.
  EXPECT_EQ(route_call(kXpud, "", "GetMetrics", kOwner, kReadOnly).route, Route::Deny);
}

TEST(ApiFilter, ConfigureVirtualFunctionsOnlyOnTheSriovSocket) {
  EXPECT_EQ(
      route_call(kXpud, "com.kunlunxin.xpud1.Manager", "ConfigureVirtualFunctions", kOwner, kSriov)
          .route,
      Route::ForwardIfHostAllows);
  EXPECT_EQ(
      route_call(kOwner, "com.kunlunxin.xpud1.Manager", "ConfigureVirtualFunctions", kOwner, kSriov)
          .route,
      Route::ForwardIfHostAllows);
  // The read-only socket refuses it to everyone, whoever asks and whatever the host allows.
  const auto on_read_only = route_call(kXpud, "com.kunlunxin.xpud1.Manager",
                                       "ConfigureVirtualFunctions", kOwner, kReadOnly);
  EXPECT_EQ(on_read_only.route, Route::Deny);
  EXPECT_EQ(on_read_only.reason,
            "com.kunlunxin.xpud1.Manager.ConfigureVirtualFunctions on com.kunlunxin.xpud1 is not "
            "served on xpud's read-only API socket: the device plugin reaches it on the SR-IOV "
            "socket (/run/xpud-api-sriov/bus.sock, the chart's devicePlugin.reconfigVxpu)");
  // Reads are the same on both sockets.
  EXPECT_EQ(route_call(kXpud, "com.kunlunxin.xpud1.Manager", "ListDevices", kOwner, kSriov).route,
            Route::Forward);
  EXPECT_EQ(route_call(kXpud, "com.kunlunxin.xpud1.Simulator", "SetHealth", kOwner, kSriov).route,
            Route::Deny);
  // The same member on another interface or service is no exception.
  EXPECT_EQ(route_call(kXpud, "com.kunlunxin.xpud1.Simulator", "ConfigureVirtualFunctions", kOwner,
                       kSriov)
                .route,
            Route::Deny);
  EXPECT_EQ(route_call(kXpud, "", "ConfigureVirtualFunctions", kOwner, kSriov).route, Route::Deny);
  EXPECT_EQ(route_call("org.freedesktop.systemd1", "com.kunlunxin.xpud1.Manager",
                       "ConfigureVirtualFunctions", kOwner, kReadOnly)
                .route,
            Route::Deny);

  EXPECT_EQ(xpu::api_proxy::cluster_write_refusal(true, 0u), std::nullopt);
  EXPECT_EQ(xpu::api_proxy::cluster_write_refusal(false, 0u),
            "com.kunlunxin.xpud1.Manager.ConfigureVirtualFunctions is not allowed from the cluster "
            "on this "
            "host: xpud's [sriov] allow_cluster_reconfigure is false (ClusterReconfigureAllowed)");
  EXPECT_EQ(xpu::api_proxy::cluster_write_refusal(true, 1000u),
            "com.kunlunxin.xpud1.Manager.ConfigureVirtualFunctions through xpud's API socket is "
            "for clients "
            "running as uid 0 (the device plugin), not uid 1000");
  EXPECT_NE(xpu::api_proxy::cluster_write_refusal(true, std::nullopt), std::nullopt);
  EXPECT_NE(xpu::api_proxy::cluster_write_refusal(false, 1000u), std::nullopt);
}

TEST(ApiFilter, OtherServicesAreUnreachable) {
  auto systemd = route_call("org.freedesktop.systemd1", "org.freedesktop.systemd1.Manager",
                            "StartTransientUnit", kOwner, kReadOnly);
  EXPECT_EQ(systemd.route, Route::Deny);
  EXPECT_EQ(systemd.reason,
            "only com.kunlunxin.xpud1 is reachable on xpud's read-only API socket, not "
            "org.freedesktop.systemd1");
  EXPECT_EQ(route_call("org.freedesktop.login1", "org.freedesktop.login1.Manager", "PowerOff",
                       kOwner, kReadOnly)
                .route,
            Route::Deny);
  // A reader's allowed call, sent to another service, is still refused.
  EXPECT_EQ(route_call("org.freedesktop.login1", "org.freedesktop.DBus.Properties", "GetAll",
                       kOwner, kReadOnly)
                .route,
            Route::Deny);
  EXPECT_EQ(route_call(":1.7", "org.freedesktop.DBus.Properties", "Get", kOwner, kReadOnly).route,
            Route::Deny);
  EXPECT_EQ(route_call("", "com.kunlunxin.xpud1.Manager", "GetMetrics", kOwner, kReadOnly).route,
            Route::Deny);
  // Before xpud owns its name, no unique name stands for it.
  EXPECT_EQ(route_call("", "com.kunlunxin.xpud1.Manager", "GetMetrics", "", kReadOnly).route,
            Route::Deny);
}

TEST(ApiFilter, BusDriverAnswersOnlyWhatClientsNeedToConnect) {
  for (const char* member :
       {"Hello", "AddMatch", "RemoveMatch", "GetNameOwner", "NameHasOwner", "ListNames", "GetId"})
    EXPECT_EQ(
        route_call("org.freedesktop.DBus", "org.freedesktop.DBus", member, kOwner, kReadOnly).route,
        Route::BusDriver)
        << member;
  for (const char* member :
       {"RequestName", "ReleaseName", "StartServiceByName", "GetConnectionCredentials",
        "GetConnectionUnixUser", "UpdateActivationEnvironment", "BecomeMonitor"}) {
    auto route =
        route_call("org.freedesktop.DBus", "org.freedesktop.DBus", member, kOwner, kReadOnly);
    EXPECT_EQ(route.route, Route::Deny) << member;
    EXPECT_NE(route.reason.find(member), std::string::npos) << route.reason;
  }
  EXPECT_EQ(route_call("org.freedesktop.DBus", "org.freedesktop.DBus.Monitoring", "BecomeMonitor",
                       kOwner, kReadOnly)
                .route,
            Route::Deny);
}

}  // namespace
