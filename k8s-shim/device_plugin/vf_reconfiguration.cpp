#include "k8s-shim/device_plugin/vf_reconfiguration.h"

#include <utility>

#include <spdlog/spdlog.h>

namespace shim {

std::optional<xpu::DeviceInfo> next_card_to_reconfigure(const xpu::DeviceView& view,
                                                        unsigned vfs_per_card,
                                                        const std::set<std::string>& asked) {
  if (!view.xpud_present || vfs_per_card == 0) return std::nullopt;
  std::size_t physical = 0, virtual_functions = 0;
  for (const auto& device : view.devices)
    ++(device.is_virtual_function ? virtual_functions : physical);
  if (virtual_functions == std::size_t{vfs_per_card} * physical) return std::nullopt;
  for (const auto& device : view.devices)  // ordered by index
    if (!device.is_virtual_function && !asked.contains(device.uuid)) return device;
  return std::nullopt;
}

VfReconfiguration::VfReconfiguration(unsigned vfs_per_card, Configure configure)
    : vfs_per_card_(vfs_per_card), configure_(std::move(configure)) {}

bool VfReconfiguration::step(const xpu::DeviceView& view) {
  if (!view.xpud_present) {
    asked_.clear();  // a new xpud (restart, new configuration) is asked afresh
    return false;
  }
  auto card = next_card_to_reconfigure(view, vfs_per_card_, asked_);
  if (!card) return false;
  asked_.insert(card->uuid);
  spdlog::info("--reconfig-vxpu: asking xpud for {} virtual functions on {} ({})", vfs_per_card_,
               card->name, card->pci_bus_id);
  if (auto done = configure_(card->index, vfs_per_card_); done)
    spdlog::info("--reconfig-vxpu: {} set to {} virtual functions", card->name, vfs_per_card_);
  else
    spdlog::warn("--reconfig-vxpu: {} not changed: {}; not asking again until xpud restarts",
                 card->name, done.error());
  return next_card_to_reconfigure(view, vfs_per_card_, asked_).has_value();
}

}  // namespace shim
