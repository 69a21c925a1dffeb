// Kubernetes resource.Quantity strings as the API server returns them ("32Gi", "1500M",
// "34359738368", "1e3") read as whole numbers: a device's capacity is bytes or counts here, so a
// value that is not a whole number is an error rather than something to round.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace shim::dra {

// Accepts an optional sign, digits with an optional fraction, and one suffix: binary Ki Mi Gi Ti
// Pi Ei, decimal n u m k M G T P E, or an exponent e/E with optional sign. Errors on syntax, on a
// value outside int64 and on a value that is not a whole number ("1500m", "0.5").
xpu::Result<std::int64_t> parse_quantity(std::string_view text);

// How this driver writes a quantity: a plain integer, which every parser reads.
std::string format_quantity(std::int64_t value);

}  // namespace shim::dra
