#include "xpud/backends/sim/sim_identity.h"

#include <cstdio>
#include <string>

#include "common/fnv1a.h"
#include "common/names.h"

namespace xpud::sim {
namespace {

constexpr std::uint64_t kMiB = 1024ull * 1024ull;
constexpr std::uint64_t kGiB = 1024ull * kMiB;

// Stable and UUID-shaped: FNV-1a of `key`, then a splitmix64 finaliser to spread bits. `tail`
// is what keeps it unique, whatever the hash does.
std::string uuid_of(const std::string& key, unsigned group, std::uint64_t tail) {
  std::uint64_t h = xpu::fnv1a_64(key);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%08x-%04x-4%03x-a%03x-%012llx", static_cast<unsigned>(h >> 32),
                static_cast<unsigned>(h >> 16) & 0xffffu, static_cast<unsigned>(h) & 0xfffu,
                group & 0xfffu, static_cast<unsigned long long>(tail));
  return buf;
}

}  // namespace

// Cards split in two NUMA halves; inside a half every pair is linked, and card i is linked to
// its twin i+half in the other half (the 8-card layout of xpu-facts.md, generalised).
DeviceIdentity physical_card_identity(const SimOptions& options, unsigned index) {
  const unsigned half = (options.devices + 1) / 2;
  DeviceIdentity id;
  id.index = index;
  const bool second_half = options.devices > 1 && index >= half;
  id.numa_node = second_half ? 1 : 0;
  const unsigned position = second_half ? index - half : index;
  for (unsigned other = 0; other < options.devices; ++other) {
    if (other == index) continue;
    const bool other_second = options.devices > 1 && other >= half;
    const unsigned other_position = other_second ? other - half : other;
    if (other_second == second_half || other_position == position)
      id.linked_devices.push_back(other);
  }
  // Unique per (model, index).
  id.uuid = uuid_of(options.model + "/" + std::to_string(index), index, 0x5a0000000000ull + index);
  char buf[64];
  std::snprintf(buf, sizeof buf, "SIM%s%05u", options.model.c_str(), index);
  id.serial = buf;
  id.model = options.model;
  // Buses spread over two root complexes, one per NUMA half, like a dual-socket server: the
  // first half's buses (0x10...) behind root bus 0x00, the second's (0x80...) behind root bus 0x80.
  std::snprintf(buf, sizeof buf, "%04x:%02x:00.0", index / 256,
                (second_half ? 0x80 : 0x10) + (position % 64) * 2);
  id.pci_bus_id = buf;
  std::snprintf(buf, sizeof buf, "pci%04x:%02x", index / 256, second_half ? 0x80 : 0x00);
  id.pcie_root = buf;
  id.memory_total_bytes = options.memory_mib * kMiB;
  id.device_nodes = {xpu::names::device_node(index), std::string(xpu::names::kControlNode)};
  return id;
}

std::uint64_t virtual_function_memory_bytes(std::uint64_t card_memory_bytes, unsigned count) {
  if (count == 0) return 0;
  return card_memory_bytes / count / kGiB * kGiB;
}

DeviceIdentity virtual_function_identity(const DeviceIdentity& card, unsigned count,
                                         unsigned function, unsigned index) {
  DeviceIdentity id;
  id.index = index;
  id.is_virtual_function = true;
  id.physical_function = card.pci_bus_id;
  id.memory_total_bytes = virtual_function_memory_bytes(card.memory_total_bytes, count);
  // "<model>-VF-<GiB>G": on a 16 GiB R200 exactly the header's R200-VF-16G, -8G and -5G.
  id.model = card.model + "-VF-" + std::to_string(id.memory_total_bytes / kGiB) + "G";
  // A VF of a one-of-two split is another device than one of a one-of-three split (its memory
  // differs), so the count is part of what names it; the same split always gets the same UUID.
  id.uuid = uuid_of(card.uuid + "/vf" + std::to_string(count) + "." + std::to_string(function),
                    index, 0x5f0000000000ull + card.index * 16ull + count * 4ull + function);
  id.serial = card.serial + "-VF" + std::to_string(function);
  // SR-IOV VFs are further functions after the PF, here on its own bus and device (the sim's
  // PFs are all function 0, so at most 3 VFs stay within the device's 8 functions).
  unsigned domain = 0, bus = 0, device = 0, pf_function = 0;
  std::sscanf(card.pci_bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &pf_function);
  const unsigned slot = device * 8 + pf_function + function;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", domain, bus, (slot / 8) & 0x1fu, slot % 8);
  id.pci_bus_id = buf;
  id.pcie_root = card.pcie_root;
  id.numa_node = card.numa_node;
  id.device_nodes = {xpu::names::device_node(index), std::string(xpu::names::kControlNode)};
  return id;
}

}  // namespace xpud::sim
