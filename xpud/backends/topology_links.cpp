#include "xpud/backends/topology_links.h"

#include <algorithm>
#include <cstdio>

#include <spdlog/spdlog.h>

#include "common/names.h"

namespace xpud::topology {
namespace {

std::string describe_key(const Card& card) {
  std::string text = card.model;
  std::string ids;
  if (card.key.pci) {
    char pci[64];
    std::snprintf(pci, sizeof pci, "pci %04x:%04x subsystem %04x:%04x", card.key.pci->vendor,
                  card.key.pci->device, card.key.pci->subsystem_vendor,
                  card.key.pci->subsystem_device);
    ids = pci;
  }
  if (card.key.board_id) {
    if (!ids.empty()) ids += ", ";
    ids += "xpuml board-id " + std::to_string(*card.key.board_id);
    if (card.key.model_id) ids += " model-id " + std::to_string(*card.key.model_id);
  }
  return ids.empty() ? text : text + " (" + ids + ")";
}

}  // namespace

void LinkAssigner::say_once(const std::string& message) {
  if (said_.insert(message).second) spdlog::info("topology: {}", message);
}

std::map<unsigned, std::vector<unsigned>> LinkAssigner::assign(const std::vector<Card>& cards) {
  std::map<const BoardLinks*, std::vector<const Card*>> by_board;
  for (const auto& card : cards) {
    const BoardLinks* board = table_ ? table_->find(card.key) : nullptr;
    if (board) {
      by_board[board].push_back(&card);
      continue;
    }
    say_once(table_
                 ? "no entry for board " + describe_key(card) + " in " + table_->source +
                       "; its cards have no LinkedDevices"
                 : "no link table loaded; board " + describe_key(card) + " has no LinkedDevices");
  }

  std::map<unsigned, std::vector<unsigned>> linked;
  for (auto& [board, members] : by_board) {
    const std::size_t rows = board->links.size();
    if (members.size() != rows) {
      say_once(std::to_string(members.size()) + " cards of board [" + board->name +
               "] on this node, " + table_->source + " describes " + std::to_string(rows) +
               "; their LinkedDevices stay empty");
      continue;
    }
    std::sort(members.begin(), members.end(),
              [](const Card* a, const Card* b) { return a->index < b->index; });
    // Distinct indices, as many as rows: all below `rows` means exactly 0 .. rows-1.
    const bool rows_present = std::adjacent_find(members.begin(), members.end(),
                                                 [](const Card* a, const Card* b) {
                                                   return a->index == b->index;
                                                 }) == members.end() &&
                              members.back()->index < rows;
    if (!rows_present) {
      std::string held;
      for (const Card* card : members)
        held += (held.empty() ? "" : ", ") + xpu::names::device_name(card->index) + " (" +
                card->pci_bus_id + ")";
      say_once("the cards of board [" + board->name + "] are " + held + ", but the rows of " +
               table_->source + " are physical ids 0 to " + std::to_string(rows - 1) +
               "; their LinkedDevices stay empty");
      continue;
    }
    for (const Card* card : members) {
      std::vector<unsigned> indices(board->links[card->index].begin(),
                                    board->links[card->index].end());
      std::sort(indices.begin(), indices.end());
      linked[card->index] = std::move(indices);
    }
  }
  return linked;
}

}  // namespace xpud::topology
