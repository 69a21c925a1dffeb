#include "xpud/bus/bus_errors.h"

#include <unistd.h>

#include <sdbus-c++/Error.h>

#include "common/names.h"

namespace xpud {

namespace names = xpu::names;

std::string error_name(DriverChangeError::Kind kind) {
  switch (kind) {
    case DriverChangeError::Kind::NoSuchDevice:
      return std::string(names::kErrorNoSuchDevice);
    case DriverChangeError::Kind::NotSupported:
      return std::string(names::kErrorNotSupported);
    case DriverChangeError::Kind::InvalidArgument:
      return std::string(names::kErrorInvalidArgument);
    case DriverChangeError::Kind::NoSuchInstance:
      return std::string(names::kErrorNoSuchInstance);
    case DriverChangeError::Kind::InUse:
      return std::string(names::kErrorInUse);
    case DriverChangeError::Kind::Failed:
      break;
  }
  return std::string(names::kErrorBackend);
}

void authorize_root(uid_t caller, std::string_view method) {
  if (caller != 0 && caller != ::geteuid())
    throw sdbus::Error(std::string(names::bus::kErrorAccessDenied),
                       std::string(method) + " is for root or xpud's own user");
}

void throw_if(const std::optional<DriverChangeError>& refusal) {
  if (refusal) throw sdbus::Error(error_name(refusal->kind), refusal->message);
}

}  // namespace xpud
