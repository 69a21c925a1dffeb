#include "xpud/events/device_event.h"

#include <string_view>

#include "xpud/backends/sysfs/pci_function_scan.h"

namespace xpud {
namespace {

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

}  // namespace

bool concerns_xpu(const DeviceEvent& event) {
  if (event.subsystem == "pci") {
    // PCI_ID is "VVVV:DDDD" in hex; the kernel sends it with every PCI event, removal included.
    const std::string_view id = event.pci_id;
    return id.size() == 9 && id[4] == ':' && equals_ignoring_case(id.substr(0, 4), "1d22");
  }
  return event.sysname == "xpuctrl" || sysfs::parse_device_node_name(event.sysname).has_value();
}

std::string describe(const DeviceEvent& event) {
  return event.action + " " + event.subsystem + " " + event.sysname;
}

}  // namespace xpud
