// Which signals a client of xpud's bus acts on: the bus driver's NameOwnerChanged and the signals
// xpud itself broadcast, told apart from what any other peer of the bus can send.
//
// Why the match rules alone do not do it: on dbus-daemon, a match rule filters the broadcasts the
// daemon routes to us, but a signal addressed to us (a destination set) is delivered whatever our
// rules say, and the system bus's stock policy lets every client send one to every connection
// (system.conf: <allow send_type="signal"/>). sd-bus then dispatches it to a slot whose rule
// names a well-known sender (org.freedesktop.DBus, com.kunlunxin.xpud1) whenever the message's
// sender is a unique name, as it cannot know which names that sender owns (bus-match.c,
// value_node_test). So these checks are on the received message itself: dbus-daemon writes each
// message's sender field from the connection that sent it (no client can claim
// org.freedesktop.DBus), and it broadcasts NameOwnerChanged with that sender and no destination
// (bus/driver.c, bus_driver_send_service_owner_changed), as xpud broadcasts its own signals.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace xpu {

// The header fields of a received signal; "" for a field the message does not have.
struct SignalOrigin {
  std::string_view sender;
  std::string_view destination;
  std::string_view path;
  std::string_view interface;
  std::string_view member;
};

// nullopt when `signal` is the bus driver's broadcast NameOwnerChanged; else why it is not.
std::optional<std::string> why_not_driver_owner_change(const SignalOrigin& signal);

// nullopt when `signal` is one of xpud's (names::signals::kXpud), broadcast from one of xpud's
// objects by `xpud_owner`, the unique name that owns xpud's bus name ("" when none does); else
// why it is not.
std::optional<std::string> why_not_xpud_signal(const SignalOrigin& signal,
                                               std::string_view xpud_owner);

// "Member from SENDER to DESTINATION", for logs.
std::string describe_signal(const SignalOrigin& signal);

}  // namespace xpu
