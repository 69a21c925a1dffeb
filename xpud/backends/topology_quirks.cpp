#include "xpud/backends/topology_quirks.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include "common/command_line.h"
#include "common/unique_fd.h"

namespace xpud::topology {
namespace {

constexpr std::size_t kMaxLineLength = 4096;
constexpr std::size_t kMaxNameLength = 64;
constexpr std::string_view kLinksPrefix = "Links.";

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

std::vector<std::string_view> split_words(std::string_view text) {
  std::vector<std::string_view> words;
  while (true) {
    text = trim(text);
    if (text.empty()) return words;
    const auto end = text.find_first_of(" \t");
    words.push_back(text.substr(0, end));
    if (end == std::string_view::npos) return words;
    text.remove_prefix(end);
  }
}

// "1d22:3684": two hex numbers of 1 to 4 digits.
std::optional<std::pair<std::uint16_t, std::uint16_t>> parse_hex_pair(std::string_view text) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto hex = [](std::string_view digits) -> std::optional<std::uint16_t> {
    if (digits.empty() || digits.size() > 4) return std::nullopt;
    std::uint16_t value = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, 16);
    if (ec != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
    return value;
  };
  auto first = hex(text.substr(0, colon));
  auto second = hex(text.substr(colon + 1));
  if (!first || !second) return std::nullopt;
  return std::pair{*first, *second};
}

std::string describe(const PciMatch& m) {
  char text[64];
  std::snprintf(text, sizeof text, "pci %04x:%04x subsystem %04x:%04x", m.vendor, m.device,
                m.subsystem_vendor, m.subsystem_device);
  return text;
}

std::string describe(const PciDeviceMatch& m) {
  char text[32];
  std::snprintf(text, sizeof text, "pci %04x:%04x", m.vendor, m.device);
  return text;
}

std::string describe(const BoardIdMatch& m) {
  std::string text = "xpuml board-id " + std::to_string(m.board_id);
  if (m.model_id) text += " model-id " + std::to_string(*m.model_id);
  return text;
}

// One pass over the text; the first problem ends it.
class Parser {
 public:
  explicit Parser(std::string_view source) { table_.source = std::string(source); }

  xpu::Result<LinkTable> parse(std::string_view text) {
    unsigned number = 0;
    while (!text.empty()) {
      ++number;
      const auto newline = text.find('\n');
      std::string_view line = text.substr(0, newline);
      text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (auto status = parse_line(line, number); !status) return xpu::Error{status.error()};
    }
    if (auto status = finish_group(); !status) return xpu::Error{status.error()};
    return std::move(table_);
  }

 private:
  struct Row {
    std::vector<unsigned> links;
    unsigned line = 0;
  };

  xpu::Error fail(unsigned line, const std::string& reason) const {
    return xpu::Error{table_.source + ":" + std::to_string(line) + ": " + reason};
  }

  xpu::Status parse_line(std::string_view raw, unsigned number) {
    if (raw.size() > kMaxLineLength)
      return fail(number, "line longer than " + std::to_string(kMaxLineLength) + " characters");
    for (char c : raw) {
      const auto byte = static_cast<unsigned char>(c);
      if ((byte < 0x20 && c != '\t') || byte >= 0x7f)
        return fail(number, "control or non-ASCII byte 0x" +
                                std::string(1, "0123456789abcdef"[byte >> 4]) +
                                "0123456789abcdef"[byte & 15] + " (the file is plain ASCII text)");
    }
    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#' || line.front() == ';') return xpu::ok_status();
    if (line.front() == '[') return start_group(line, number);

    const auto equals = line.find('=');
    if (equals == std::string_view::npos)
      return fail(number, "expected [Name], Key = Value or a comment");
    const std::string_view key = trim(line.substr(0, equals));
    const std::string_view value = trim(line.substr(equals + 1));
    if (!group_) return fail(number, "'" + std::string(key) + "' before the first [Name] group");
    auto status = set_key(key, value, number);
    if (!status && value.find_first_of("#;") != std::string_view::npos)
      return xpu::Error{status.error() + " (comments go on a line of their own)"};
    return status;
  }

  xpu::Status start_group(std::string_view line, unsigned number) {
    if (line.back() != ']') return fail(number, "a group line is [Name] with nothing after ']'");
    const std::string_view name = line.substr(1, line.size() - 2);
    const bool valid =
        !name.empty() && name.size() <= kMaxNameLength &&
        std::all_of(name.begin(), name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
        });
    if (!valid)
      return fail(number, "group name must be 1 to " + std::to_string(kMaxNameLength) +
                              " letters, digits, '-', '_' or '.'");
    if (auto status = finish_group(); !status) return status;
    for (const auto& board : table_.boards)
      if (board.name == name)
        return fail(number, "group [" + std::string(name) + "] already started at line " +
                                std::to_string(board.line));
    group_ = BoardLinks{};
    group_->name = std::string(name);
    group_->line = number;
    cards_.reset();
    rows_.clear();
    return xpu::ok_status();
  }

  xpu::Status set_key(std::string_view key, std::string_view value, unsigned number) {
    if (key == "Match") return add_match(value, number);
    if (key == "Cards") {
      if (cards_) return fail(number, "Cards given twice in [" + group_->name + "]");
      auto count = xpu::parse_uint(value, 1, kMaxCardsPerBoard);
      if (!count) return fail(number, "bad Cards: " + count.error());
      cards_ = static_cast<unsigned>(*count);
      return xpu::ok_status();
    }
    if (key.starts_with(kLinksPrefix)) {
      auto row = xpu::parse_uint(key.substr(kLinksPrefix.size()), 0, kMaxCardsPerBoard - 1);
      if (!row) return fail(number, "bad row in '" + std::string(key) + "': " + row.error());
      const auto k = static_cast<unsigned>(*row);
      if (auto seen = rows_.find(k); seen != rows_.end())
        return fail(number, std::string(key) + " already given at line " +
                                std::to_string(seen->second.line));
      Row parsed{{}, number};
      for (auto word : split_words(value)) {
        auto card = xpu::parse_uint(word, 0, kMaxCardsPerBoard - 1);
        if (!card) return fail(number, "bad card in " + std::string(key) + ": " + card.error());
        const auto linked = static_cast<unsigned>(*card);
        if (linked == k)
          return fail(number, std::string(key) + " links card " + std::to_string(k) + " to itself");
        if (std::find(parsed.links.begin(), parsed.links.end(), linked) != parsed.links.end())
          return fail(number,
                      std::string(key) + " names card " + std::to_string(linked) + " twice");
        parsed.links.push_back(linked);
      }
      std::sort(parsed.links.begin(), parsed.links.end());
      rows_.emplace(k, std::move(parsed));
      return xpu::ok_status();
    }
    return fail(number,
                "unknown key '" + std::string(key) + "' (expected Match, Cards or Links.N)");
  }

  xpu::Status add_match(std::string_view value, unsigned number) {
    const auto words = split_words(value);
    const std::string usage =
        "Match is 'pci VVVV:DDDD [subsystem SSSS:SSSS]' or 'xpuml board-id N [model-id M]'";
    if (words.size() == 2 && words[0] == "pci") {
      auto ids = parse_hex_pair(words[1]);
      if (!ids) return fail(number, "bad PCI ids in Match: " + usage);
      PciDeviceMatch match{ids->first, ids->second};
      if (auto status = check_unused(describe(match), number); !status) return status;
      group_->pci_device_matches.push_back(match);
      return xpu::ok_status();
    }
    if (words.size() == 4 && words[0] == "pci" && words[2] == "subsystem") {
      auto ids = parse_hex_pair(words[1]);
      auto subsystem = parse_hex_pair(words[3]);
      if (!ids || !subsystem) return fail(number, "bad PCI ids in Match: " + usage);
      PciMatch match{ids->first, ids->second, subsystem->first, subsystem->second};
      if (auto status = check_unused(describe(match), number); !status) return status;
      group_->pci_matches.push_back(match);
      return xpu::ok_status();
    }
    if ((words.size() == 3 || words.size() == 5) && words[0] == "xpuml" && words[1] == "board-id" &&
        (words.size() == 3 || words[3] == "model-id")) {
      BoardIdMatch match;
      auto board = xpu::parse_uint(words[2], 0, INT_MAX);
      if (!board) return fail(number, "bad board-id in Match: " + board.error());
      match.board_id = static_cast<int>(*board);
      if (words.size() == 5) {
        auto model = xpu::parse_uint(words[4], 0, INT_MAX);
        if (!model) return fail(number, "bad model-id in Match: " + model.error());
        match.model_id = static_cast<int>(*model);
      }
      if (auto status = check_unused(describe(match), number); !status) return status;
      group_->board_id_matches.push_back(match);
      return xpu::ok_status();
    }
    return fail(number, usage);
  }

  // One card must never fit two groups through the same match.
  xpu::Status check_unused(const std::string& match, unsigned number) {
    auto [where, inserted] = matches_.emplace(match, std::pair{group_->name, number});
    if (!inserted)
      return fail(number, "'" + match + "' already matches [" + where->second.first + "] at line " +
                              std::to_string(where->second.second));
    return xpu::ok_status();
  }

  xpu::Status finish_group() {
    if (!group_) return xpu::ok_status();
    const std::string group = "[" + group_->name + "]";
    if (group_->pci_matches.empty() && group_->pci_device_matches.empty() &&
        group_->board_id_matches.empty())
      return fail(group_->line, group + " has no Match line");
    if (!cards_) return fail(group_->line, group + " has no Cards line");
    for (const auto& [k, row] : rows_) {
      if (k >= *cards_)
        return fail(row.line, "Links." + std::to_string(k) + " is beyond Cards = " +
                                  std::to_string(*cards_) + " (rows count from 0)");
      for (unsigned linked : row.links) {
        if (linked >= *cards_)
          return fail(row.line, "Links." + std::to_string(k) + " names card " +
                                    std::to_string(linked) +
                                    ", beyond Cards = " + std::to_string(*cards_));
        auto back = rows_.find(linked);
        if (back == rows_.end()) continue;  // reported below as a missing row
        if (!std::binary_search(back->second.links.begin(), back->second.links.end(), k))
          return fail(row.line, "Links." + std::to_string(k) + " links card " +
                                    std::to_string(linked) + " but Links." +
                                    std::to_string(linked) + " does not link card " +
                                    std::to_string(k) + " (links go both ways)");
      }
    }
    for (unsigned k = 0; k < *cards_; ++k) {
      auto row = rows_.find(k);
      if (row == rows_.end())
        return fail(group_->line, group + " has no Links." + std::to_string(k) +
                                      " (one row per card; an unlinked card has an empty one)");
      group_->links.push_back(std::move(row->second.links));
    }
    table_.boards.push_back(std::move(*group_));
    group_.reset();
    return xpu::ok_status();
  }

  LinkTable table_;
  std::optional<BoardLinks> group_;
  std::optional<unsigned> cards_;
  std::map<unsigned, Row> rows_;
  std::map<std::string, std::pair<std::string, unsigned>> matches_;  // match -> group, line
};

}  // namespace

const BoardLinks* LinkTable::find(const CardKey& card) const {
  if (card.board_id)
    for (const auto& board : boards)
      for (const auto& match : board.board_id_matches)
        if (match.board_id == *card.board_id &&
            (!match.model_id || match.model_id == card.model_id))
          return &board;
  if (card.pci)
    for (const auto& board : boards)
      for (const auto& match : board.pci_matches)
        if (match == *card.pci) return &board;
  if (card.pci)
    for (const auto& board : boards)
      for (const auto& match : board.pci_device_matches)
        if (match.vendor == card.pci->vendor && match.device == card.pci->device) return &board;
  return nullptr;
}

xpu::Result<LinkTable> parse_link_table(std::string_view text, std::string_view source) {
  return Parser(source).parse(text);
}

xpu::Result<LinkTable> load_link_table(const std::filesystem::path& path) {
  const std::string name = path.string();
  xpu::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) return xpu::Error{name + ": cannot open: " + std::strerror(errno)};
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0)
    return xpu::Error{name + ": cannot stat: " + std::strerror(errno)};
  if (!S_ISREG(info.st_mode)) return xpu::Error{name + ": not a regular file"};
  if (static_cast<std::uint64_t>(info.st_size) > kMaxQuirkFileBytes)
    return xpu::Error{name + ": larger than " + std::to_string(kMaxQuirkFileBytes) + " bytes"};

  std::string text;
  char buffer[8192];
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return xpu::Error{name + ": cannot read: " + std::strerror(errno)};
    if (n == 0) break;
    // The file may grow between fstat and here.
    if (text.size() + static_cast<std::size_t>(n) > kMaxQuirkFileBytes)
      return xpu::Error{name + ": larger than " + std::to_string(kMaxQuirkFileBytes) + " bytes"};
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return parse_link_table(text, name);
}

std::filesystem::path default_link_table_path() {
  return XPUD_DEFAULT_TOPOLOGY_QUIRKS;
}

}  // namespace xpud::topology
