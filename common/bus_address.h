// Which bus a connection goes to, spelled out for the message an operator reads when it cannot
// be opened: sd-bus's own error ("Failed to open bus (No such file or directory)") names neither
// the address it tried nor why it tried that one.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <sdbus-c++/IConnection.h>

namespace xpu {

enum class BusKind { kSystem, kSession };

struct BusTarget {
  BusKind kind = BusKind::kSystem;
  std::optional<std::string> address;  // --bus-address: this bus, whatever the kind
};

// The address sd-bus connects to for `target`: the given one; for the system bus
// $DBUS_SYSTEM_BUS_ADDRESS, else unix:path=/run/dbus/system_bus_socket; for the session bus
// $DBUS_SESSION_BUS_ADDRESS, else unix:path=$XDG_RUNTIME_DIR/bus; nullopt when a session bus
// has neither variable.
std::optional<std::string> bus_address_used(const BusTarget& target);

// "the system bus at unix:path=/run/dbus/system_bus_socket", "the bus at ADDR", "the session bus
// (neither $DBUS_SESSION_BUS_ADDRESS nor $XDG_RUNTIME_DIR is set)".
std::string describe_bus(const BusTarget& target);

// A client connection to the bus at `address` (--bus-address). Throws sdbus::Error as sdbus-c++
// does ("Failed to open bus (No such file or directory)"), without leaking: sdbus-c++ 1.2 keeps
// the sd_bus it made when the connection fails, so every retry of a client whose bus is missing
// would cost memory; the connection is tried with an sd_bus owned here first.
std::unique_ptr<sdbus::IConnection> connect_to_address(const std::string& address);

}  // namespace xpu
