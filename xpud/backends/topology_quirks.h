// The topology quirk table (xpud/backends/topology.quirk, installed under /usr/share/xpud/):
// board facts as data, in the style of fwupd's .quirk files. Each group names a board, says how
// to recognise it (PCI ids, the library's board id) and lists, for a node with that many cards of
// the board, which card is linked to which. The format is described at the top of the file.
//
// The file is outside input: anything malformed is an error naming file:line, never a crash, and
// a file that fails to parse is rejected as a whole.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace xpud::topology {

// Largest table file accepted, and most cards one board entry may describe.
inline constexpr std::size_t kMaxQuirkFileBytes = 1 << 20;
inline constexpr unsigned kMaxCardsPerBoard = 64;

struct PciMatch {
  std::uint16_t vendor = 0;
  std::uint16_t device = 0;
  std::uint16_t subsystem_vendor = 0;
  std::uint16_t subsystem_device = 0;
  bool operator==(const PciMatch&) const = default;
};

// A PCI vendor:device whatever the subsystem ids: for a board whose subsystem ids no public
// source gives.
struct PciDeviceMatch {
  std::uint16_t vendor = 0;
  std::uint16_t device = 0;
  bool operator==(const PciDeviceMatch&) const = default;
};

struct BoardIdMatch {
  int board_id = 0;
  std::optional<int> model_id;  // unset: any model of the board
  bool operator==(const BoardIdMatch&) const = default;
};

struct BoardLinks {
  std::string name;   // the group name, for log lines
  unsigned line = 0;  // where the group starts
  std::vector<PciMatch> pci_matches;
  std::vector<PciDeviceMatch> pci_device_matches;
  std::vector<BoardIdMatch> board_id_matches;
  // links[k]: the rows card k is linked to, ascending; links.size() is the card count.
  std::vector<std::vector<unsigned>> links;
};

// What a backend knows about one card to look it up; any part may be unknown.
struct CardKey {
  std::optional<PciMatch> pci;
  std::optional<int> board_id;
  std::optional<int> model_id;
};

struct LinkTable {
  std::string source;  // the file it came from, for log lines
  std::vector<BoardLinks> boards;

  // The board the card belongs to: the first group whose board-id match fits, else the first
  // whose PCI match (with subsystem ids) does, else the first whose PCI vendor:device alone
  // does; nullptr when none.
  const BoardLinks* find(const CardKey& card) const;
};

// Parses table text; `source` names it in errors ("<source>:<line>: <reason>").
xpu::Result<LinkTable> parse_link_table(std::string_view text, std::string_view source);

// Reads and parses a table file: a regular file of at most kMaxQuirkFileBytes, opened without
// blocking (a FIFO cannot hang start-up).
xpu::Result<LinkTable> load_link_table(const std::filesystem::path& path);

// Where this build installs the table (<datadir>/xpud/topology.quirk, /usr/share/xpud/... in the
// packages): the default of [topology] quirks. A function, so that the install prefix reaches one
// object file, not every file that includes xpud/config.h.
std::filesystem::path default_link_table_path();

}  // namespace xpud::topology
