#include "xpuctl/vfio_commands.h"

#include <chrono>
#include <cstdio>

#include "common/command_line.h"
#include "common/names.h"
#include "common/xpud_client.h"
#include "common/xpud_vfio_client.h"
#include "xpuctl/json_writer.h"
#include "xpuctl/table.h"

namespace xpuctl {
namespace {

constexpr const char* kProgram = "xpuctl";
// xpud answers after the move and the discovery that follows it; a kernel probe may take seconds.
constexpr std::chrono::seconds kMoveTimeout{60};

int fail(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", kProgram, message.c_str());
  return 1;
}

int list(const xpu::ClientOptions& options, bool json_output) {
  auto functions = xpu::XpudVfioClient(options).list();
  if (!functions) return fail(functions.error());
  if (json_output) {
    JsonWriter json;
    json.begin_array();
    for (const auto& f : *functions)
      json.begin_object()
          .key("pci_bus_id")
          .value(f.pci_bus_id)
          .key("pci_id")
          .value(f.pci_id)
          .key("iommu_group")
          .value(f.iommu_group)
          .key("model")
          .value(f.model)
          .key("is_virtual_function")
          .value(f.is_virtual_function)
          .key("physical_function")
          .value(f.physical_function)
          .key("numa_node")
          .value(f.numa_node)
          .end_object();
    json.end_array();
    std::printf("%s\n", json.str().c_str());
    return 0;
  }
  Table table({"PCI-ADDRESS", "PCI-ID", "MODEL", "VF-OF", "IOMMU-GROUP", "NODE", "NUMA"});
  for (const auto& f : *functions)
    table.add({f.pci_bus_id, f.pci_id, f.model,
               f.physical_function.empty() ? "-" : f.physical_function, f.iommu_group,
               "/dev/vfio/" + f.iommu_group, f.numa_node < 0 ? "-" : std::to_string(f.numa_node)});
  std::fputs(table.render().c_str(), stdout);
  return 0;
}

// A card's index or name to its PCI address through xpud's device list; anything else is
// passed on as an address for xpud to check.
xpu::Result<std::string> resolve(const xpu::ClientOptions& options, const std::string& target) {
  std::string digits = target;
  if (digits.rfind("xpu", 0) == 0) digits = digits.substr(3);
  auto index = xpu::parse_uint(digits, 0, 1u << 20);
  if (!index || digits.empty()) return target;
  auto devices = xpu::XpudClient(options).list_devices();
  if (!devices) return xpu::Error{devices.error()};
  for (const auto& device : *devices)
    if (device.index == *index) return device.pci_bus_id;
  return xpu::Error{"no card " + xpu::names::device_name(static_cast<unsigned>(*index)) +
                    " (a card on vfio-pci is no card of xpud's: give its PCI address, "
                    "xpuctl vfio list)"};
}

}  // namespace

int run_vfio_command(const xpu::ClientOptions& options, const std::vector<std::string>& rest,
                     bool json_output) {
  const std::string& action = rest[1];
  if (action == "list") {
    if (rest.size() != 2) xpu::exit_usage_error(kProgram, "'vfio list' takes no arguments");
    return list(options, json_output);
  }
  if (action != "bind" && action != "unbind")
    xpu::exit_usage_error(kProgram,
                          "vfio: list, bind TARGET or unbind TARGET, not '" + action + "'");
  if (rest.size() != 3) xpu::exit_usage_error(kProgram, "usage: vfio " + action + " TARGET");
  auto address = resolve(options, rest[2]);
  if (!address) return fail(address.error());
  xpu::XpudVfioClient client(options);
  auto done = action == "bind" ? client.bind(*address, kMoveTimeout)
                               : client.unbind(*address, kMoveTimeout);
  if (!done) return fail(done.error());
  std::printf("%s: %s\n", address->c_str(),
              action == "bind" ? "on vfio-pci, for a virtual machine"
                               : "back on its driver, a card of xpud's");
  return 0;
}

}  // namespace xpuctl
