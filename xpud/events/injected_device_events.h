// Test hook: device events written to a socket instead of sent by udev, so that hot-plug tests
// on a fake sysfs tree go through the same path as a uevent (DeviceEvent -> concerns_xpu ->
// discovery) without privileges or real hardware.
//
// xpud uses it instead of udev's monitor when the environment names a socket path in
// XPUD_TEST_DEVICE_EVENTS; nothing else turns it on, and it is no part of the Backend interface.
// xpud creates the socket (SOCK_DGRAM, mode 0600). One datagram is one event, written as the
// kernel writes a uevent's properties: KEY=VALUE separated by NUL or newline, with ACTION,
// DEVPATH and SUBSYSTEM required and PCI_ID read when present:
//   ACTION=add\nDEVPATH=/devices/pci0000:b0/0000:b1:00.0\nSUBSYSTEM=pci\nPCI_ID=1D22:3684\n
#pragma once

#include <filesystem>
#include <memory>
#include <string_view>

#include "common/result.h"
#include "xpud/events/device_event_source.h"

namespace xpud {

inline constexpr const char* kInjectedEventsVariable = "XPUD_TEST_DEVICE_EVENTS";

xpu::Result<std::unique_ptr<DeviceEventSource>> make_injected_device_events(
    const std::filesystem::path& socket_path, DeviceEventSink sink);

// One datagram's event; an error names what is wrong with it.
xpu::Result<DeviceEvent> parse_uevent_properties(std::string_view datagram);

}  // namespace xpud
