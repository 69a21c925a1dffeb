// Changing the number of SR-IOV virtual functions: the one write a hardware backend offers, kept
// apart from the read-only Backend interface. A backend that can do it returns itself from
// Backend::virtual_functions(); the others (sim) return nullptr.
//
// Threading: like every driver call, only from the sampler's driver thread (see backend.h).
#pragma once

#include <optional>
#include <string>

#include "xpud/device.h"

namespace xpud {

struct VfChangeError {
  enum class Kind {
    NoSuchDevice,     // the card is gone since the last discovery
    NotSupported,     // no SR-IOV on this card (or it is itself a virtual function)
    InvalidArgument,  // count above the card's maximum
    Failed,           // the driver or the kernel refused, or a file could not be written
  };
  Kind kind;
  std::string message;  // names the card and the cause, for the caller and the journal
};

class VirtualFunctionControl {
 public:
  virtual ~VirtualFunctionControl() = default;
  // Makes `device` (a physical function found by the last discover()) have `count` virtual
  // functions; nothing to do when it already has. The new functions show up in a later
  // discover(), as hot-plugged cards do.
  virtual std::optional<VfChangeError> set_virtual_function_count(const DeviceIdentity& device,
                                                                  unsigned count) = 0;
};

}  // namespace xpud
