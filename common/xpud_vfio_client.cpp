#include "common/xpud_vfio_client.h"

#include <type_traits>

#include <sdbus-c++/sdbus-c++.h>

#include "common/names.h"
#include "common/xpud_connection.h"

namespace xpu {

Result<std::vector<VfioFunctionInfo>> fetch_vfio_functions(sdbus::IConnection& connection,
                                                           std::chrono::milliseconds timeout) {
  auto proxy = sdbus::createProxy(connection, std::string(names::kBusName),
                                  std::string(names::kManagerPath));
  sdbus::Variant value;
  proxy->callMethod("Get")
      .onInterface(std::string(names::bus::kPropertiesInterface))
      .withTimeout(timeout)
      .withArguments(std::string(names::vfio::kInterface), std::string(names::vfio::kDevices))
      .storeResultsTo(value);
  using Entry =
      sdbus::Struct<std::string, std::string, std::string, std::string, bool, std::string, int32_t>;
  if (!value.containsValueOfType<std::vector<Entry>>())
    return Error{std::string(names::vfio::kInterface) + ".Devices has an unexpected type"};
  std::vector<VfioFunctionInfo> functions;
  for (auto& entry : value.get<std::vector<Entry>>())
    functions.push_back(VfioFunctionInfo{entry.get<0>(), entry.get<1>(), entry.get<2>(),
                                         entry.get<3>(), entry.get<4>(), entry.get<5>(),
                                         entry.get<6>()});
  return functions;
}

namespace {
// One call on a connection of its own: `call` runs on it, its sdbus::Error becomes the message a
// failed call gives (`describe_error`), and a failed connection says which bus it was.
template <typename Call, typename Describe>
std::invoke_result_t<Call, sdbus::IConnection&> on_connection(const ClientOptions& options,
                                                              Call&& call,
                                                              Describe&& describe_error) {
  std::unique_ptr<sdbus::IConnection> connection;
  try {
    connection = open_connection(options);
  } catch (const sdbus::Error& e) {
    return Error{describe_connect_failure(e, options)};
  }
  try {
    return call(*connection);
  } catch (const sdbus::Error& e) {
    return Error{describe_error(e)};
  }
}
}  // namespace

Result<std::vector<VfioFunctionInfo>> XpudVfioClient::list() const {
  return on_connection(
      options_,
      [this](sdbus::IConnection& connection) {
        return fetch_vfio_functions(connection, options_.call_timeout);
      },
      [this](const sdbus::Error& e) { return describe_call_failure(e, options_); });
}

Status XpudVfioClient::move(std::string_view member, const std::string& pci_bus_id,
                            std::chrono::milliseconds timeout) const {
  return on_connection(
      options_,
      [&](sdbus::IConnection& connection) -> Status {
        auto proxy = sdbus::createProxy(connection, std::string(names::kBusName),
                                        std::string(names::kManagerPath));
        proxy->callMethod(std::string(member))
            .onInterface(std::string(names::vfio::kInterface))
            .withTimeout(timeout)
            .withArguments(pci_bus_id);
        return ok_status();
      },
      [this](const sdbus::Error& e) {
        // xpud's own AccessDenied says why; the generic wording would blame the bus policy.
        if (e.getName() == names::bus::kErrorAccessDenied && !e.getMessage().empty() &&
            e.getMessage().find("Rejected send message") == std::string::npos)
          return e.getMessage() + " (" + e.getName() + ")";
        return describe_call_failure(e, options_);
      });
}

Status XpudVfioClient::bind(const std::string& pci_bus_id,
                            std::chrono::milliseconds timeout) const {
  return move(names::vfio::kBind, pci_bus_id, timeout);
}

Status XpudVfioClient::unbind(const std::string& pci_bus_id,
                              std::chrono::milliseconds timeout) const {
  return move(names::vfio::kUnbind, pci_bus_id, timeout);
}

}  // namespace xpu
