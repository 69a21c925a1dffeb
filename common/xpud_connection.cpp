#include "common/xpud_connection.h"

#include "common/bus_address.h"
#include "common/names.h"

namespace xpu {

std::unique_ptr<sdbus::IConnection> open_connection(const ClientOptions& options) {
  if (options.bus_address) return connect_to_address(*options.bus_address);
  return sdbus::createSystemBusConnection();
}

std::string bus_description(const ClientOptions& options) {
  return describe_bus(BusTarget{BusKind::kSystem, options.bus_address});
}

std::string describe_connect_failure(const sdbus::Error& e, const ClientOptions& options) {
  std::string hint = options.bus_address
                         ? "is a bus running there, with xpud on it (xpud --bus-address " +
                               *options.bus_address + ")?"
                         : "xpud may not be running (systemctl status xpud), or it serves another "
                           "bus (--bus-address ADDR)";
  return "cannot connect to " + bus_description(options) + ": " + e.getMessage() + "; " + hint;
}

std::string describe_call_failure(const sdbus::Error& e, const ClientOptions& options) {
  const std::string& name = e.getName();
  if (name == names::bus::kErrorServiceUnknown || name == names::bus::kErrorNameHasNoOwner)
    return "xpud is not running (" + std::string(names::kBusName) + " has no owner on " +
           bus_description(options) + ")";
  if (name == names::bus::kErrorNoReply || name == names::bus::kErrorTimeout)
    return "xpud did not answer in time (" + e.getMessage() + ")";
  if (name == names::bus::kErrorAccessDenied)
    return "access denied by the bus policy: " + e.getMessage();
  return e.getMessage().empty() ? name : e.getMessage() + " (" + name + ")";
}

bool is_answer(const sdbus::Error& e) {
  const std::string& name = e.getName();
  return name == names::bus::kErrorServiceUnknown || name == names::bus::kErrorNameHasNoOwner ||
         name == names::bus::kErrorAccessDenied || name == names::bus::kErrorUnknownMethod ||
         name == names::bus::kErrorUnknownObject || name == names::bus::kErrorInvalidArgs ||
         name.rfind(names::kErrorPrefix, 0) == 0;
}

}  // namespace xpu
