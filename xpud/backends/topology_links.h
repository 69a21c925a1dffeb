// Turns the topology quirk table into LinkedDevices for the cards a hardware backend found.
//
// The rule (the same for the xpuml and sysfs backends):
//  1. Each physical card is looked up in the table (LinkTable::find); virtual functions are
//     not passed in and never get links.
//  2. The cards of one board are sorted by PCI bus id (then host index, for the two chips of a
//     K200 that share an address); the card at position k in that order takes the table's row
//     k, and row k's entries are positions in the same order, turned into host indices.
//  3. Only when the node has exactly the table's number of cards of that board: with fewer or
//     more, which slot a card sits in cannot be told from its bus id, so none gets links.
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
  unsigned index = 0;       // host index (/dev/xpu<index>)
  std::string pci_bus_id;   // normalised
  std::string model;        // for log lines
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
