// Why a change asked of the driver (virtual functions, cXPU instances) did not happen. The
// changes themselves are kept apart from the read-only Backend interface: virtual_functions.h,
// cxpu_instances.h.
#pragma once

#include <string>

namespace xpud {

struct DriverChangeError {
  enum class Kind {
    NoSuchDevice,     // the card is gone since the last discovery
    NotSupported,     // the card, the backend or the library cannot do it
    InvalidArgument,  // a value the card cannot take (a count above its maximum, a limit above
                      // its memory)
    NoSuchInstance,   // a cXPU instance neither xpud nor the library knows
    InUse,            // a cXPU instance would take what other instances hold (a share, or the
                      // card's memory)
    Failed,           // the driver or the kernel refused, or a file could not be written
  };
  Kind kind;
  std::string message;  // names the card and the cause, for the caller and the journal
};

}  // namespace xpud
