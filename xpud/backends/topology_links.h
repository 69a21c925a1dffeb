// Turns the topology quirk table into LinkedDevices for the cards a hardware backend found.
//
// The rule (the same for the xpuml and sysfs backends):
//  1. Each physical card is looked up in the table (LinkTable::find); virtual functions are
//     not passed in and never get links.
//  2. Rows are physical ids: row k describes the card whose index is k (/dev/xpu<k>, the
//     library's xpumlDeviceGetId), and row k's entries are indices too. The driver's own link
//     table is keyed by a card id it reads from a board register, which is not the PCI order;
//     the physical id is the userspace number nearest to it (see topology.quirk).
//  3. Only when the node's cards of that board are exactly the indices 0 .. Cards-1: with fewer,
//     more or other indices (a card that failed to probe frees its id for a later one), which
//     row a card is cannot be told, so none gets links.
// A card of a board the table does not know, or of a board present in another count, gets no
// links, and an info line says so once per process (not on every discovery).
//
// Threading: one instance per backend, used from the backend's (the sampler's driver) thread.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "xpud/backends/topology_quirks.h"

namespace xpud::topology {

struct Card {
  unsigned index = 0;      // host index (/dev/xpu<index>), the physical id: the card's row
  std::string pci_bus_id;  // normalised, for log lines
  std::string model;       // for log lines
  CardKey key;
};

class LinkAssigner {
 public:
  // `table` may be null (no table loaded): every card is then of an unknown board.
  explicit LinkAssigner(std::shared_ptr<const LinkTable> table) : table_(std::move(table)) {}

  // Linked host indices (ascending) by host index; a card absent from the result has none.
  std::map<unsigned, std::vector<unsigned>> assign(const std::vector<Card>& cards);

 private:
  void say_once(const std::string& message);

  std::shared_ptr<const LinkTable> table_;
  std::set<std::string> said_;
};

}  // namespace xpud::topology
