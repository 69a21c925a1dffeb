#include "xpud/backends/topology_links.h"

#include <algorithm>
#include <cstdio>
#include <tuple>

#include <spdlog/spdlog.h>

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
    say_once(table_ ? "no entry for board " + describe_key(card) + " in " + table_->source +
                          "; its cards have no LinkedDevices"
                    : "no link table loaded; board " + describe_key(card) +
                          " has no LinkedDevices");
  }

  std::map<unsigned, std::vector<unsigned>> linked;
  for (auto& [board, members] : by_board) {
    if (members.size() != board->links.size()) {
      say_once(std::to_string(members.size()) + " cards of board [" + board->name +
               "] on this node, " + table_->source + " describes " +
               std::to_string(board->links.size()) + "; their LinkedDevices stay empty");
      continue;
    }
    std::sort(members.begin(), members.end(), [](const Card* a, const Card* b) {
      return std::tie(a->pci_bus_id, a->index) < std::tie(b->pci_bus_id, b->index);
    });
    for (std::size_t k = 0; k < members.size(); ++k) {
      std::vector<unsigned> indices;
      for (unsigned row : board->links[k]) indices.push_back(members[row]->index);
      std::sort(indices.begin(), indices.end());
      linked[members[k]->index] = std::move(indices);
    }
  }
  return linked;
}

}  // namespace xpud::topology
