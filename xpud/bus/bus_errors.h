// What the bus objects answer when they refuse: the D-Bus error of a driver change's failure,
// and the check that only root (or xpud's own user) changes state. Shared by the Manager and the
// Simulator objects.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "xpud/backends/driver_change.h"

namespace xpud {

// The bus error a change's failure is answered with.
std::string error_name(DriverChangeError::Kind kind);

// Defence in depth behind the bus policy: only root, or xpud's own user (a test's private bus,
// where xpud need not be root), may change state. Throws sdbus::Error (AccessDenied).
void authorize_root(uid_t caller, std::string_view method);

// Throws the refusal as its bus error, if there is one.
void throw_if(const std::optional<DriverChangeError>& refusal);

}  // namespace xpud
