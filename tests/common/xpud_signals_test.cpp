// Which received signals count as the bus driver's and as xpud's: what another peer of the system
// bus can send (any member, any path, to us alone, with its own unique name as sender) must never
// pass; what dbus-daemon and xpud really send must.
#include "common/xpud_signals.h"

#include <gtest/gtest.h>

#include "common/names.h"

namespace {

using xpu::SignalOrigin;
using xpu::why_not_driver_owner_change;
using xpu::why_not_xpud_signal;
namespace names = xpu::names;

constexpr std::string_view kXpud = ":1.7";
constexpr std::string_view kPeer = ":1.42";
constexpr std::string_view kProxy = ":1.9";

SignalOrigin driver_owner_change() {
  return {names::bus::kDriverName, "", names::bus::kDriverPath, names::bus::kDriverName,
          names::bus::kNameOwnerChanged};
}

SignalOrigin health_changed() {
  return {kXpud, "", names::kManagerPath, names::kManagerInterface,
          names::signals::kDeviceHealthChanged};
}

TEST(XpudSignals, TheDriversBroadcastNameOwnerChangedIsTaken) {
  EXPECT_EQ(why_not_driver_owner_change(driver_owner_change()), std::nullopt);
}

TEST(XpudSignals, ANameOwnerChangedFromAPeerIsNot) {
  auto forged = driver_owner_change();
  forged.sender = kPeer;  // dbus-daemon writes the sender: a peer cannot claim the driver's name
  forged.destination = kProxy;
  EXPECT_EQ(why_not_driver_owner_change(forged), "not sent by the bus driver");
  forged.destination = "";  // broadcast by a peer: still not the driver's
  EXPECT_EQ(why_not_driver_owner_change(forged), "not sent by the bus driver");
}

TEST(XpudSignals, ADriverSignalAddressedToUsOrOfAnotherMemberIsNot) {
  auto unicast = driver_owner_change();
  unicast.destination = kProxy;
  EXPECT_EQ(why_not_driver_owner_change(unicast), "addressed to one connection, not broadcast");
  for (auto tweak :
       {+[](SignalOrigin& s) { s.member = "NameAcquired"; }, +[](SignalOrigin& s) { s.path = "/"; },
        +[](SignalOrigin& s) { s.interface = names::bus::kPropertiesInterface; }}) {
    auto other = driver_owner_change();
    tweak(other);
    EXPECT_EQ(why_not_driver_owner_change(other), "not the driver's NameOwnerChanged");
  }
}

TEST(XpudSignals, EverySignalXpudBroadcastsIsTaken) {
  for (const auto& [interface, member] : names::signals::kXpud) {
    for (const std::string& path : {std::string(names::kManagerPath), names::device_path(3)}) {
      SignalOrigin s{kXpud, "", path, interface, member};
      EXPECT_EQ(why_not_xpud_signal(s, kXpud), std::nullopt) << interface << "." << member;
    }
  }
}

TEST(XpudSignals, XpudsSignalsFromAnyoneButItsOwnerAreNot) {
  auto forged = health_changed();
  forged.sender = kPeer;
  EXPECT_EQ(why_not_xpud_signal(forged, kXpud),
            "its sender does not own com.kunlunxin.xpud1 (:1.7 does)");
  forged.destination = kProxy;
  EXPECT_NE(why_not_xpud_signal(forged, kXpud), std::nullopt);
  EXPECT_EQ(why_not_xpud_signal(health_changed(), ""), "no one owns com.kunlunxin.xpud1");
}

TEST(XpudSignals, OnlyBroadcastsOfXpudsApiFromItsObjectsAreTaken) {
  auto unicast = health_changed();
  unicast.destination = kProxy;
  EXPECT_EQ(why_not_xpud_signal(unicast, kXpud), "addressed to one connection, not broadcast");
  auto other_member = health_changed();
  other_member.member = "DeviceExploded";
  EXPECT_EQ(why_not_xpud_signal(other_member, kXpud), "not a signal of xpud's API");
  auto driver_member = health_changed();
  driver_member.interface = names::bus::kDriverName;
  driver_member.member = names::bus::kNameOwnerChanged;
  EXPECT_EQ(why_not_xpud_signal(driver_member, kXpud), "not a signal of xpud's API");
  for (std::string_view path : {"/", "/com/kunlunxin/xpud10", "/com/kunlunxin"}) {
    auto elsewhere = health_changed();
    elsewhere.path = path;
    EXPECT_EQ(why_not_xpud_signal(elsewhere, kXpud), "not from one of xpud's objects") << path;
  }
}

TEST(XpudSignals, DescribesASignalForTheLog) {
  auto forged = health_changed();
  forged.sender = kPeer;
  forged.destination = kProxy;
  EXPECT_EQ(xpu::describe_signal(forged),
            "com.kunlunxin.xpud1.Manager.DeviceHealthChanged from :1.42 to :1.9");
  EXPECT_EQ(xpu::describe_signal(driver_owner_change()),
            "org.freedesktop.DBus.NameOwnerChanged from org.freedesktop.DBus to all");
}

}  // namespace
