// Device events from udev, through libsystemd's sd-device monitor: events of the "pci" subsystem
// (filtered to vendor 0x1d22 later, by concerns_xpu) and of devices tagged "xpud" by
// 60-xpud.rules (the XPU device nodes, whatever class the driver registers them under). udev
// sends an event once it has processed it, so a node named in an "add" exists by then.
#pragma once

#include <memory>

#include "common/result.h"
#include "xpud/events/device_event_source.h"

namespace xpud {

// The udev tag 60-xpud.rules puts on the XPU device nodes.
inline constexpr const char* kUdevTag = "xpud";

// Fails where no netlink socket can be had (a sandbox without AF_NETLINK, seccomp); the caller
// falls back to the rescan.
xpu::Result<std::unique_ptr<DeviceEventSource>> make_uevent_monitor(DeviceEventSink sink);

}  // namespace xpud
