// The topology quirk table parser: the shipped file, good tables, and hostile ones (every error
// names file:line and why; nothing crashes).
#include "xpud/backends/topology_quirks.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/child_process.h"

namespace xpud::topology {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr const char* kGood = R"(# two boards
; semicolon comments too
[Quad]
Match = pci 1d22:3684 subsystem 0002:0009
Match = xpuml board-id 200 model-id 3
Cards = 4
Links.0 = 1
Links.1 = 0
Links.2 =   3
Links.3 = 2

[Pair]
Match = xpuml board-id 201
Cards = 2
Links.1 =
Links.0 =
)";

// The driver's KL2_R300_CCIX_TOPOLOGY, decoded (docs/hardware.md): card ids linked by a CCIX port.
bool r300_linked(unsigned a, unsigned b) {
  static const unsigned pairs[][2] = {{0, 1}, {0, 3}, {1, 2}, {1, 5}, {2, 3}, {2, 5},
                                      {2, 6}, {3, 4}, {4, 5}, {4, 7}, {5, 6}, {6, 7}};
  for (const auto& [x, y] : pairs)
    if ((a == x && b == y) || (a == y && b == x)) return true;
  return false;
}

// HAMi's P800 node: pairs within a half, and i with i + 4 across.
bool p800_linked(unsigned a, unsigned b) {
  return a != b && ((a < 4) == (b < 4) || a % 4 == b % 4);
}

std::filesystem::path shipped() {
  return std::filesystem::path(XPU_SOURCE_DIR) / "xpud/backends/topology.quirk";
}

TEST(TopologyQuirks, TheShippedTableHasTheR300LinksOfTheDriversTable) {
  auto table = load_link_table(shipped());
  ASSERT_TRUE(table) << table.error();
  const BoardLinks* r300 = table->find(CardKey{PciMatch{0x1d22, 0x3684, 2, 3}, {}, {}});
  ASSERT_NE(r300, nullptr);
  EXPECT_EQ(table->find(CardKey{{}, 101, 3}), r300) << "board id 101 is the R300 too";
  EXPECT_EQ(r300->name, "R300");
  ASSERT_EQ(r300->links.size(), 8u);
  for (unsigned a = 0; a < 8; ++a)
    for (unsigned b = 0; b < 8; ++b)
      EXPECT_EQ(std::binary_search(r300->links[a].begin(), r300->links[a].end(), b),
                r300_linked(a, b))
          << a << "-" << b;
}

TEST(TopologyQuirks, TheShippedTableHasHamisP800LayoutByPciDeviceAlone) {
  auto table = load_link_table(shipped());
  ASSERT_TRUE(table) << table.error();
  const BoardLinks* p800 = table->find(CardKey{PciMatch{0x1d22, 0x3688, 0, 0}, {}, {}});
  ASSERT_NE(p800, nullptr);
  EXPECT_EQ(p800->name, "P800");
  EXPECT_EQ(table->find(CardKey{PciMatch{0x1d22, 0x3688, 0x1d22, 0x1234}, {}, {}}), p800)
      << "any subsystem";
  ASSERT_EQ(p800->links.size(), 8u);
  for (unsigned a = 0; a < 8; ++a)
    for (unsigned b = 0; b < 8; ++b)
      EXPECT_EQ(std::binary_search(p800->links[a].begin(), p800->links[a].end(), b),
                p800_linked(a, b))
          << a << "-" << b;
}

TEST(TopologyQuirks, TheShippedTableHasNoR200) {
  auto table = load_link_table(shipped());
  ASSERT_TRUE(table) << table.error();
  EXPECT_EQ(table->find(CardKey{PciMatch{0x1d22, 0x3684, 2, 1}, 100, 2}), nullptr)
      << "no public source gives R200 links";
  EXPECT_EQ(table->find(CardKey{PciMatch{0x1d22, 0x3685, 2, 1}, {}, {}}), nullptr) << "a VF";
  EXPECT_EQ(table->boards.size(), 2u);
}

TEST(TopologyQuirks, APciMatchWithSubsystemWinsOverOneWithout) {
  auto table = parse_link_table(
      "[Any]\nMatch = pci 1d22:3688\nCards = 1\nLinks.0 =\n"
      "[Exact]\nMatch = pci 1d22:3688 subsystem 0002:0007\nCards = 1\nLinks.0 =\n",
      "t.quirk");
  ASSERT_TRUE(table) << table.error();
  EXPECT_EQ(table->find(CardKey{PciMatch{0x1d22, 0x3688, 2, 7}, {}, {}})->name, "Exact");
  EXPECT_EQ(table->find(CardKey{PciMatch{0x1d22, 0x3688, 2, 8}, {}, {}})->name, "Any");
  EXPECT_EQ(table->find(CardKey{PciMatch{0x1d22, 0x3684, 2, 7}, {}, {}}), nullptr);
  auto twice = parse_link_table(
      "[A]\nMatch = pci 1d22:3688\nCards = 1\nLinks.0 =\n[B]\nMatch = pci 1d22:3688\n", "t.quirk");
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error(), "t.quirk:6: 'pci 1d22:3688' already matches [A] at line 2");
}

TEST(TopologyQuirks, ParsesGroupsMatchesAndRows) {
  auto table = parse_link_table(kGood, "good.quirk");
  ASSERT_TRUE(table) << table.error();
  ASSERT_EQ(table->boards.size(), 2u);
  const auto& quad = table->boards[0];
  EXPECT_EQ(quad.name, "Quad");
  EXPECT_EQ(quad.line, 3u);
  EXPECT_THAT(quad.pci_matches, ElementsAre(PciMatch{0x1d22, 0x3684, 2, 9}));
  EXPECT_THAT(quad.board_id_matches, ElementsAre(BoardIdMatch{200, 3}));
  EXPECT_THAT(quad.links,
              ElementsAre(ElementsAre(1u), ElementsAre(0u), ElementsAre(3u), ElementsAre(2u)));
  EXPECT_THAT(table->boards[1].links, ElementsAre(ElementsAre(), ElementsAre()));
}

TEST(TopologyQuirks, BoardIdMatchesBeforePciIdsAndModelIdNarrows) {
  auto table = parse_link_table(kGood, "good.quirk");
  ASSERT_TRUE(table) << table.error();
  const BoardLinks* quad = &table->boards[0];
  const BoardLinks* pair = &table->boards[1];
  EXPECT_EQ(table->find(CardKey{PciMatch{0x1d22, 0x3684, 2, 9}, {}, {}}), quad);
  EXPECT_EQ(table->find(CardKey{{}, 200, 3}), quad);
  EXPECT_EQ(table->find(CardKey{{}, 200, 4}), nullptr) << "model-id 3 only";
  EXPECT_EQ(table->find(CardKey{{}, 201, 99}), pair) << "no model-id: any model";
  EXPECT_EQ(table->find(CardKey{PciMatch{0x1d22, 0x3684, 2, 9}, 201, {}}), pair)
      << "the library's board id names the board more exactly than the PCI ids";
  EXPECT_EQ(table->find(CardKey{}), nullptr);
}

TEST(TopologyQuirks, AcceptsCrLfAndAnEmptyFile) {
  auto crlf =
      parse_link_table("[P]\r\nMatch = xpuml board-id 1\r\nCards = 1\r\nLinks.0 =\r\n", "crlf");
  ASSERT_TRUE(crlf) << crlf.error();
  EXPECT_EQ(crlf->boards.size(), 1u);
  auto empty = parse_link_table("", "empty");
  ASSERT_TRUE(empty) << empty.error();
  EXPECT_TRUE(empty->boards.empty());
}

struct BadCase {
  const char* what;
  std::string text;
  const char* error;  // the whole message: file:line: reason
};

class TopologyQuirksBad : public ::testing::TestWithParam<BadCase> {};

TEST_P(TopologyQuirksBad, IsRejectedWithFileLineAndReason) {
  auto table = parse_link_table(GetParam().text, "t.quirk");
  ASSERT_FALSE(table) << GetParam().what;
  EXPECT_EQ(table.error(), GetParam().error) << GetParam().what;
}

const std::string kHead = "[B]\nMatch = xpuml board-id 7\nCards = 2\n";

INSTANTIATE_TEST_SUITE_P(
    Lines, TopologyQuirksBad,
    ::testing::Values(
        BadCase{"key before a group", "Cards = 2\n",
                "t.quirk:1: 'Cards' before the first [Name] group"},
        BadCase{"neither group nor key", kHead + "Links.0 1\n",
                "t.quirk:4: expected [Name], Key = Value or a comment"},
        BadCase{"unknown key", kHead + "Link.0 = 1\n",
                "t.quirk:4: unknown key 'Link.0' (expected Match, Cards or Links.N)"},
        BadCase{"text after the group", "[B] x\n",
                "t.quirk:1: a group line is [Name] with nothing after ']'"},
        BadCase{"bad group name", "[a/b]\n",
                "t.quirk:1: group name must be 1 to 64 letters, digits, '-', '_' or '.'"},
        BadCase{"empty group name", "[]\n",
                "t.quirk:1: group name must be 1 to 64 letters, digits, '-', '_' or '.'"},
        BadCase{"group twice", kHead + "Links.0 = 1\nLinks.1 = 0\n[B]\n",
                "t.quirk:6: group [B] already started at line 1"},
        BadCase{"match garbage", "[B]\nMatch = usb 1:2\n",
                "t.quirk:2: Match is 'pci VVVV:DDDD [subsystem SSSS:SSSS]' or 'xpuml board-id N "
                "[model-id M]'"},
        BadCase{
            "pci ids not hex", "[B]\nMatch = pci 1d22:36g4 subsystem 2:1\n",
            "t.quirk:2: bad PCI ids in Match: Match is 'pci VVVV:DDDD [subsystem SSSS:SSSS]' or "
            "'xpuml board-id N [model-id M]'"},
        BadCase{
            "pci id too long", "[B]\nMatch = pci 11d22:3684 subsystem 2:1\n",
            "t.quirk:2: bad PCI ids in Match: Match is 'pci VVVV:DDDD [subsystem SSSS:SSSS]' or "
            "'xpuml board-id N [model-id M]'"},
        BadCase{"negative board id", "[B]\nMatch = xpuml board-id -1\n",
                "t.quirk:2: bad board-id in Match: '-1' is not a non-negative integer"},
        BadCase{"match used by two groups",
                kHead + "Links.0 = 1\nLinks.1 = 0\n[C]\nMatch = xpuml board-id 7\n",
                "t.quirk:7: 'xpuml board-id 7' already matches [B] at line 2"},
        BadCase{"cards zero", "[B]\nMatch = xpuml board-id 7\nCards = 0\n",
                "t.quirk:3: bad Cards: '0' is out of range [1, 64]"},
        BadCase{"cards twice", kHead + "Cards = 2\n", "t.quirk:4: Cards given twice in [B]"},
        BadCase{"inline comment", "[B]\nMatch = xpuml board-id 7\nCards = 2  # two\n",
                "t.quirk:3: bad Cards: '2  # two' is not a non-negative integer (comments go on a "
                "line of their own)"},
        BadCase{"row beyond cards", kHead + "Links.0 = 1\nLinks.1 = 0\nLinks.2 =\n",
                "t.quirk:6: Links.2 is beyond Cards = 2 (rows count from 0)"},
        BadCase{"card beyond cards", kHead + "Links.0 = 1 5\nLinks.1 = 0\n",
                "t.quirk:4: Links.0 names card 5, beyond Cards = 2"},
        BadCase{"row twice", kHead + "Links.0 = 1\nLinks.0 = 1\n",
                "t.quirk:5: Links.0 already given at line 4"},
        BadCase{"linked to itself", kHead + "Links.0 = 0\n",
                "t.quirk:4: Links.0 links card 0 to itself"},
        BadCase{"card twice in a row", kHead + "Links.0 = 1 1\n",
                "t.quirk:4: Links.0 names card 1 twice"},
        BadCase{"one-way link",
                "[B]\nMatch = xpuml board-id 7\nCards = 3\nLinks.0 = 1 2\nLinks.1 = 0\nLinks.2 =\n",
                "t.quirk:4: Links.0 links card 2 but Links.2 does not link card 0 (links go both "
                "ways)"},
        BadCase{
            "missing row", kHead + "Links.0 =\n",
            "t.quirk:1: [B] has no Links.1 (one row per card; an unlinked card has an empty one)"},
        BadCase{"no match", "[B]\nCards = 1\nLinks.0 =\n", "t.quirk:1: [B] has no Match line"},
        BadCase{"no cards", "[B]\nMatch = xpuml board-id 7\n[C]\n",
                "t.quirk:1: [B] has no Cards line"},
        BadCase{"row number not a number", kHead + "Links.x = 1\n",
                "t.quirk:4: bad row in 'Links.x': 'x' is not a non-negative integer"},
        BadCase{"row number huge", kHead + "Links.99999999999999999999 = 1\n",
                "t.quirk:4: bad row in 'Links.99999999999999999999': '99999999999999999999' is not "
                "a non-negative integer"},
        BadCase{"NUL byte", kHead + std::string("Links.0 = 1\0", 12) + "\n",
                "t.quirk:4: control or non-ASCII byte 0x00 (the file is plain ASCII text)"},
        BadCase{"non-ASCII", "[B\xc3\xa9]\n",
                "t.quirk:1: control or non-ASCII byte 0xc3 (the file is plain ASCII text)"},
        BadCase{"very long line", "#" + std::string(5000, 'x') + "\n",
                "t.quirk:1: line longer than 4096 characters"}));

TEST(TopologyQuirksFile, AMissingFileSaysSo) {
  xpu::test::TempDir dir;
  auto table = load_link_table(dir.path() / "none.quirk");
  ASSERT_FALSE(table);
  EXPECT_EQ(table.error(),
            (dir.path() / "none.quirk").string() + ": cannot open: No such file or directory");
}

TEST(TopologyQuirksFile, ADirectoryOrAFifoIsNotATable) {
  xpu::test::TempDir dir;
  auto directory = load_link_table(dir.path());
  ASSERT_FALSE(directory);
  EXPECT_EQ(directory.error(), dir.path().string() + ": not a regular file");
  // A FIFO with no writer: opened without blocking, then refused.
  const auto fifo = dir.path() / "fifo.quirk";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto from_fifo = load_link_table(fifo);
  ASSERT_FALSE(from_fifo);
  EXPECT_EQ(from_fifo.error(), fifo.string() + ": not a regular file");
}

TEST(TopologyQuirksFile, AHugeFileIsRefusedUnread) {
  xpu::test::TempDir dir;
  const auto path = dir.path() / "huge.quirk";
  {
    std::ofstream out(path);
    out << std::string(kMaxQuirkFileBytes + 1, '#');
  }
  auto table = load_link_table(path);
  ASSERT_FALSE(table);
  EXPECT_THAT(table.error(), StartsWith(path.string() + ": larger than"));
}

TEST(TopologyQuirksFile, ErrorsNameTheFile) {
  xpu::test::TempDir dir;
  const auto path = dir.path() / "bad.quirk";
  xpu::test::write_file(path, "[R200]\nMatch = pci 1d22:3684 subsystem 0002:0001\nCards = eight\n");
  auto table = load_link_table(path);
  ASSERT_FALSE(table);
  EXPECT_EQ(table.error(), path.string() + ":3: bad Cards: 'eight' is not a non-negative integer");
}

}  // namespace
}  // namespace xpud::topology
