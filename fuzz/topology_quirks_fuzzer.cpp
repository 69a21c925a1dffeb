// The topology quirk table (xpud/backends/topology.quirk; [topology] quirks may name any file):
// a table that parses must describe a symmetric link graph within each board's card count, and
// the link rule (topology_links.h) must give every card of a fully present board only links to
// other cards of that board.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "xpud/backends/topology_links.h"
#include "xpud/backends/topology_quirks.h"

namespace {

using xpu::fuzz::check;
namespace topology = xpud::topology;

void check_board(const topology::BoardLinks& board) {
  const auto cards = board.links.size();
  check(cards >= 1 && cards <= topology::kMaxCardsPerBoard, "card count", board.name);
  check(!board.pci_matches.empty() || !board.pci_device_matches.empty() ||
            !board.board_id_matches.empty(),
        "board without a Match", board.name);
  for (std::size_t k = 0; k < cards; ++k) {
    const auto& row = board.links[k];
    check(std::set<unsigned>(row.begin(), row.end()).size() == row.size(), "repeated link",
          board.name);
    for (unsigned other : row) {
      check(other < cards && other != k, "link outside the board or to itself", board.name);
      const auto& back = board.links[other];
      check(std::find(back.begin(), back.end(), k) != back.end(), "asymmetric link", board.name);
    }
  }
}

// Every board present with exactly its card count, at made-up addresses in bus order; rows are
// indices, so only the first board's cards (indices 0 .. Cards-1) can get links.
void check_assignment(const std::shared_ptr<const topology::LinkTable>& table) {
  std::vector<topology::Card> cards;
  unsigned index = 0;
  for (const auto& board : table->boards) {
    if (board.pci_matches.empty()) continue;
    for (std::size_t k = 0; k < board.links.size(); ++k, ++index) {
      char bus_id[16];
      std::snprintf(bus_id, sizeof bus_id, "%04x:%02x:00.0", index / 256, index % 256);
      cards.push_back(
          topology::Card{index, bus_id, board.name, {board.pci_matches.front(), {}, {}}});
    }
  }
  topology::LinkAssigner assigner(table);
  for (const auto& [card, linked] : assigner.assign(cards)) {
    check(card < index, "links for a card that was not passed in");
    for (unsigned other : linked) check(other < index && other != card, "link to an unknown card");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  xpu::fuzz::quiet_logging();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto table = topology::parse_link_table(
      std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.quirk");
  if (!table) {
    check(table.error().starts_with("fuzz.quirk:"), "error does not name file:line", table.error());
    return 0;
  }
  for (const auto& board : table->boards) check_board(board);
  check_assignment(std::make_shared<const topology::LinkTable>(std::move(*table)));
  return 0;
}
