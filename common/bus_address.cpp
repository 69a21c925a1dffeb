#include "common/bus_address.h"

#include <systemd/sd-bus.h>

#include <cstdlib>

#include <sdbus-c++/Error.h>

namespace xpu {
namespace {

constexpr const char* kDefaultSystemBus = "unix:path=/run/dbus/system_bus_socket";

std::optional<std::string> environment(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

}  // namespace

std::optional<std::string> bus_address_used(const BusTarget& target) {
  if (target.address) return target.address;
  if (target.kind == BusKind::kSystem)
    return environment("DBUS_SYSTEM_BUS_ADDRESS").value_or(kDefaultSystemBus);
  if (auto address = environment("DBUS_SESSION_BUS_ADDRESS")) return address;
  if (auto runtime_dir = environment("XDG_RUNTIME_DIR"))
    return "unix:path=" + *runtime_dir + "/bus";
  return std::nullopt;
}

std::string describe_bus(const BusTarget& target) {
  if (target.address) return "the bus at " + *target.address;
  const std::string kind = target.kind == BusKind::kSystem ? "the system bus" : "the session bus";
  if (auto address = bus_address_used(target)) return kind + " at " + *address;
  return kind + " (neither $DBUS_SESSION_BUS_ADDRESS nor $XDG_RUNTIME_DIR is set)";
}

std::unique_ptr<sdbus::IConnection> connect_to_address(const std::string& address) {
  sd_bus* raw = nullptr;
  if (int r = sd_bus_new(&raw); r < 0) throw sdbus::createError(-r, "Failed to create bus");
  std::unique_ptr<sd_bus, decltype(&sd_bus_flush_close_unref)> probe(raw,
                                                                     &sd_bus_flush_close_unref);
  int r = sd_bus_set_address(probe.get(), address.c_str());
  if (r >= 0) r = sd_bus_set_bus_client(probe.get(), 1);
  if (r >= 0) r = sd_bus_start(probe.get());
  if (r < 0) throw sdbus::createError(-r, "Failed to open bus");
  probe.reset();
  return sdbus::createSessionBusConnectionWithAddress(address);
}

}  // namespace xpu
