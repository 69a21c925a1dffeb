// Reading xpud's objects: the property maps of GetManagedObjects / GetAll turned into DeviceInfo
// and ManagerInfo, every name from common/names.h and every type checked, so a malformed or
// hostile reply becomes an error, never a crash or a half-filled device.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <sdbus-c++/IConnection.h>
#include <sdbus-c++/Types.h>

#include "common/result.h"
#include "common/xpud_types.h"

namespace xpu {

using PropertyMap = std::map<std::string, sdbus::Variant>;

// One com.kunlunxin.xpud1.Device object. Properties added after the first release are optional,
// so a client keeps working with an older xpud.
Result<DeviceInfo> parse_device(const PropertyMap& properties);
// The com.kunlunxin.xpud1.Manager object.
Result<ManagerInfo> parse_manager(const PropertyMap& properties);

// Every device object (malformed ones are logged and left out), ordered by index. Throws
// sdbus::Error when the call fails.
Result<std::vector<DeviceInfo>> fetch_devices(sdbus::IConnection& connection,
                                              std::chrono::milliseconds timeout);
// Throws sdbus::Error when the call fails.
Result<ManagerInfo> fetch_manager(sdbus::IConnection& connection,
                                  std::chrono::milliseconds timeout);

}  // namespace xpu
