// The rule that turns the link table into LinkedDevices: PCI order within the node, only with
// exactly the table's number of cards, unknown boards said once.
#include "xpud/backends/topology_links.h"

#include <algorithm>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/xpud/backends/captured_log.h"

namespace xpud::topology {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::shared_ptr<const LinkTable> shipped_table() {
  auto table = load_link_table(std::filesystem::path(XPU_SOURCE_DIR) / "xpud/backends/topology.quirk");
  EXPECT_TRUE(table) << table.error();
  return table ? std::make_shared<const LinkTable>(std::move(*table)) : nullptr;
}

const PciMatch kR200{0x1d22, 0x3684, 2, 1};
const PciMatch kR300{0x1d22, 0x3684, 2, 3};

std::string bus(unsigned b) {
  char text[16];
  std::snprintf(text, sizeof text, "0000:%02x:00.0", b);
  return text;
}

// Eight R200s whose /dev numbers do not follow the bus order: bus 0x10 + k holds index index_of[k].
std::vector<Card> shuffled_r200s(const unsigned (&index_of)[8]) {
  std::vector<Card> cards;
  for (unsigned k = 0; k < 8; ++k) cards.push_back(Card{index_of[k], bus(0x10 + k), "R200", {kR200, {}, {}}});
  std::reverse(cards.begin(), cards.end());  // the order they come in does not matter
  return cards;
}

TEST(TopologyLinks, EightR200sAreLinkedByPciOrderNotByIndex) {
  const unsigned index_of[8] = {3, 0, 7, 1, 2, 6, 4, 5};
  LinkAssigner assigner(shipped_table());
  auto linked = assigner.assign(shuffled_r200s(index_of));
  ASSERT_EQ(linked.size(), 8u);
  for (unsigned k = 0; k < 8; ++k) {
    std::vector<unsigned> expected;
    for (unsigned j = 0; j < 8; ++j)
      if (j != k && ((j < 4) == (k < 4) || j % 4 == k % 4)) expected.push_back(index_of[j]);
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(linked[index_of[k]], expected) << "bus position " << k;
  }
}

TEST(TopologyLinks, TheLibraryBoardIdFindsTheTableWithoutPciIds) {
  LinkAssigner assigner(shipped_table());
  std::vector<Card> cards;
  for (unsigned k = 0; k < 8; ++k) cards.push_back(Card{k, bus(0x20 + k), "R200", {{}, 100, 0}});
  auto linked = assigner.assign(cards);
  EXPECT_THAT(linked[0], ElementsAre(1u, 2u, 3u, 4u));
  EXPECT_THAT(linked[7], ElementsAre(3u, 4u, 5u, 6u));
}

TEST(TopologyLinks, OtherCountsAndUnknownBoardsGetNoneAndSaySoOnce) {
  xpud::test::CapturedLog log;
  LinkAssigner assigner(shipped_table());
  std::vector<Card> cards;
  for (unsigned k = 0; k < 4; ++k) cards.push_back(Card{k, bus(0x30 + k), "R200", {kR200, {}, {}}});
  cards.push_back(Card{4, bus(0x40), "R300", {kR300, 101, 2}});
  for (int round = 0; round < 3; ++round) EXPECT_THAT(assigner.assign(cards), IsEmpty());
  EXPECT_EQ(log.count("info", "4 cards of board [R200] on this node"), 1) << log.text();
  EXPECT_EQ(log.count("info", "no entry for board R300 (pci 1d22:3684 subsystem 0002:0003, "
                              "xpuml board-id 101 model-id 2)"),
            1)
      << log.text();

  // The eight arrive (hot-plug): now they are linked, and the R300 is not said again.
  for (unsigned k = 4; k < 8; ++k) cards.push_back(Card{k + 1, bus(0x30 + k), "R200", {kR200, {}, {}}});
  auto linked = assigner.assign(cards);
  EXPECT_EQ(linked.size(), 8u);
  EXPECT_FALSE(linked.contains(4)) << "the R300";
  EXPECT_EQ(log.count("info", "R300"), 1) << log.text();
}

TEST(TopologyLinks, WithoutATableNothingIsLinked) {
  xpud::test::CapturedLog log;
  LinkAssigner assigner(nullptr);
  std::vector<Card> cards;
  for (unsigned k = 0; k < 8; ++k) cards.push_back(Card{k, bus(0x10 + k), "R200", {kR200, {}, {}}});
  EXPECT_THAT(assigner.assign(cards), IsEmpty());
  EXPECT_THAT(assigner.assign(cards), IsEmpty());
  EXPECT_EQ(log.count("info", "no link table loaded; board R200"), 1) << log.text();
}

TEST(TopologyLinks, TwoChipsAtOneAddressAreOrderedByIndex) {
  auto table = parse_link_table(
      "[Dual]\nMatch = pci 1d22:3684 subsystem 0000:0000\nCards = 4\n"
      "Links.0 = 1\nLinks.1 = 0\nLinks.2 = 3\nLinks.3 = 2\n",
      "dual.quirk");
  ASSERT_TRUE(table) << table.error();
  LinkAssigner assigner(std::make_shared<const LinkTable>(std::move(*table)));
  const PciMatch k200{0x1d22, 0x3684, 0, 0};
  auto linked = assigner.assign({Card{7, bus(0x60), "K200", {k200, {}, {}}},
                                 Card{6, bus(0x60), "K200", {k200, {}, {}}},
                                 Card{2, bus(0x50), "K200", {k200, {}, {}}},
                                 Card{3, bus(0x50), "K200", {k200, {}, {}}}});
  EXPECT_THAT(linked[2], ElementsAre(3u));
  EXPECT_THAT(linked[6], ElementsAre(7u));
}

}  // namespace
}  // namespace xpud::topology
