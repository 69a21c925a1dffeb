// Connections to the bus xpud serves on, and what a failed call means: for the operator (a
// message naming the bus and what to check) and for the client (whether the connection is still
// good or the next call must start over on a new one).
#pragma once

#include <memory>
#include <string>

#include <sdbus-c++/Error.h>
#include <sdbus-c++/IConnection.h>

#include "common/xpud_types.h"

namespace xpu {

// The system bus, or options.bus_address. Throws sdbus::Error.
std::unique_ptr<sdbus::IConnection> open_connection(const ClientOptions& options);

// "the system bus" or the address, for messages.
std::string bus_description(const ClientOptions& options);

// No bus at all is what an operator sees first when xpud is not installed or not started (or a
// pod lacks the socket): names the address tried and where to look.
std::string describe_connect_failure(const sdbus::Error& e, const ClientOptions& options);

// A failed call as a message an operator can act on.
std::string describe_call_failure(const sdbus::Error& e, const ClientOptions& options);

// True when the error is an answer (from the bus or from xpud: no owner, access denied, unknown
// method, xpud's own errors...), which leaves the connection usable; false for I/O errors and
// disconnection, after which the next call should open a new connection.
bool is_answer(const sdbus::Error& e);

}  // namespace xpu
