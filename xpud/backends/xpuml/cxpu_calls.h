// The library's three cXPU instance calls, with what xpud makes of their return codes. The
// header documents none of the codes these calls return beyond the generic ones
// (docs/hardware.md, "cXPU instances"), so every failure is reported with the library's own
// code and text, and only INVALID_ARGUMENT, NOT_SUPPORTED and NOT_FOUND get a kind of their own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "xpud/backends/driver_change.h"
#include "xpud/backends/xpuml/xpuml_api.h"

namespace xpud::xpuml {

class Library;

// `subject` names the card in messages ("xpu0 (0000:3b:00.0)"). The library must have all three
// calls (Symbols::has_cxpu_instances).
std::optional<DriverChangeError> create_cxpu_instance(Library& library, xpumlDevice_t device,
                                                      const std::string& subject,
                                                      const std::string& id,
                                                      std::uint64_t memory_limit_bytes);
std::optional<DriverChangeError> set_cxpu_memory_limit(Library& library, xpumlDevice_t device,
                                                       const std::string& subject,
                                                       const std::string& id,
                                                       std::uint64_t memory_limit_bytes);
std::optional<DriverChangeError> destroy_cxpu_instance(Library& library, xpumlDevice_t device,
                                                       const std::string& subject,
                                                       const std::string& id);

}  // namespace xpud::xpuml
