#include "xpud/backends/sysfs/device_numbering.h"

#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

#include "common/names.h"

namespace xpud::sysfs {

unsigned chips_without_published_nodes(const PciFunction& function) {
  // pci::model_from_pci_ids names subsystem 0/0 "K200"; a K100 has the same ids and one chip,
  // which then shows up as a missing second node.
  return function.model.model == "K200" ? 2 : 1;
}

std::vector<DeviceSlot> assign_device_slots(const std::vector<PciFunction>& functions) {
  std::vector<DeviceSlot> slots;
  std::set<unsigned> claimed;
  std::vector<std::size_t> unpublished;

  for (std::size_t f = 0; f < functions.size(); ++f) {
    unsigned chip = 0;
    for (unsigned node : functions[f].published_nodes) {
      if (!claimed.insert(node).second) {
        spdlog::debug("sysfs: {} also publishes {}, which belongs to an earlier function",
                      functions[f].pci_bus_id, xpu::names::device_name(node));
        continue;
      }
      slots.push_back({node, f, chip++});
    }
    if (chip == 0) unpublished.push_back(f);
  }

  // stable_partition keeps bus-id order inside each group.
  std::stable_partition(unpublished.begin(), unpublished.end(),
                        [&](std::size_t f) { return !functions[f].is_virtual_function(); });
  unsigned next = 0;
  for (std::size_t f : unpublished) {
    for (unsigned chip = 0; chip < chips_without_published_nodes(functions[f]); ++chip) {
      while (claimed.contains(next)) ++next;
      claimed.insert(next);
      slots.push_back({next, f, chip});
    }
  }

  std::sort(slots.begin(), slots.end(),
            [](const DeviceSlot& a, const DeviceSlot& b) { return a.index < b.index; });
  return slots;
}

}  // namespace xpud::sysfs
