// The rule that turns the link table into LinkedDevices: rows are physical ids (the cards'
// indices), only when the board's cards are exactly those, unknown boards said once.
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
  auto table =
      load_link_table(std::filesystem::path(XPU_SOURCE_DIR) / "xpud/backends/topology.quirk");
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

// The driver's KL2_R300_CCIX_TOPOLOGY decoded (docs/hardware.md), by card id.
std::vector<unsigned> r300_peers(unsigned card) {
  static const unsigned pairs[][2] = {{0, 1}, {0, 3}, {1, 2}, {1, 5}, {2, 3}, {2, 5},
                                      {2, 6}, {3, 4}, {4, 5}, {4, 7}, {5, 6}, {6, 7}};
  std::vector<unsigned> peers;
  for (const auto& [a, b] : pairs) {
    if (a == card) peers.push_back(b);
    if (b == card) peers.push_back(a);
  }
  std::sort(peers.begin(), peers.end());
  return peers;
}

// Eight R300s whose bus order is not their index order: bus 0x10 + k holds index index_of[k].
std::vector<Card> shuffled_r300s(const unsigned (&index_of)[8]) {
  std::vector<Card> cards;
  for (unsigned k = 0; k < 8; ++k)
    cards.push_back(Card{index_of[k], bus(0x10 + k), "R300", {kR300, {}, {}}});
  std::reverse(cards.begin(), cards.end());  // the order they come in does not matter
  return cards;
}

TEST(TopologyLinks, EightR300sAreLinkedByPhysicalIdAsTheDriversTableSaysNotByPciOrder) {
  const unsigned index_of[8] = {3, 0, 7, 1, 2, 6, 4, 5};
  LinkAssigner assigner(shipped_table());
  auto linked = assigner.assign(shuffled_r300s(index_of));
  ASSERT_EQ(linked.size(), 8u);
  for (unsigned id = 0; id < 8; ++id) EXPECT_EQ(linked[id], r300_peers(id)) << "xpu" << id;
}

TEST(TopologyLinks, TheLibraryBoardIdFindsTheR300TableWithoutPciIds) {
  LinkAssigner assigner(shipped_table());
  std::vector<Card> cards;
  for (unsigned k = 0; k < 8; ++k) cards.push_back(Card{k, bus(0x20 + k), "R300", {{}, 101, 3}});
  auto linked = assigner.assign(cards);
  EXPECT_THAT(linked[0], ElementsAre(1u, 3u));
  EXPECT_THAT(linked[2], ElementsAre(1u, 3u, 5u, 6u));
  EXPECT_THAT(linked[7], ElementsAre(4u, 6u));
}

TEST(TopologyLinks, P800sAreFoundByTheirPciDeviceIdWhateverTheSubsystem) {
  LinkAssigner assigner(shipped_table());
  std::vector<Card> cards;
  const PciMatch p800{0x1d22, 0x3688, 0x1d22, 0x0042};  // the subsystem is not known: any
  for (unsigned k = 0; k < 8; ++k) cards.push_back(Card{k, bus(0x30 + k), "P800", {p800, {}, {}}});
  auto linked = assigner.assign(cards);
  ASSERT_EQ(linked.size(), 8u);
  EXPECT_THAT(linked[0], ElementsAre(1u, 2u, 3u, 4u));
  EXPECT_THAT(linked[5], ElementsAre(1u, 4u, 6u, 7u));
}

TEST(TopologyLinks, TheShippedTableHasNoR200Entry) {
  xpud::test::CapturedLog log;
  LinkAssigner assigner(shipped_table());
  std::vector<Card> cards;
  for (unsigned k = 0; k < 8; ++k) cards.push_back(Card{k, bus(0x10 + k), "R200", {kR200, 100, 2}});
  EXPECT_THAT(assigner.assign(cards), IsEmpty());
  EXPECT_EQ(log.count("info",
                      "no entry for board R200 (pci 1d22:3684 subsystem 0002:0001, "
                      "xpuml board-id 100 model-id 2)"),
            1)
      << log.text();
}

TEST(TopologyLinks, OtherCountsAndUnknownBoardsGetNoneAndSaySoOnce) {
  xpud::test::CapturedLog log;
  LinkAssigner assigner(shipped_table());
  std::vector<Card> cards;
  for (unsigned k = 0; k < 4; ++k) cards.push_back(Card{k, bus(0x30 + k), "R300", {kR300, {}, {}}});
  cards.push_back(Card{8, bus(0x40), "R200", {kR200, 100, 2}});
  for (int round = 0; round < 3; ++round) EXPECT_THAT(assigner.assign(cards), IsEmpty());
  EXPECT_EQ(log.count("info", "4 cards of board [R300] on this node"), 1) << log.text();
  EXPECT_EQ(log.count("info", "no entry for board R200"), 1) << log.text();

  // The eight arrive (hot-plug): now they are linked, and the R200 is not said again.
  for (unsigned k = 4; k < 8; ++k) cards.push_back(Card{k, bus(0x30 + k), "R300", {kR300, {}, {}}});
  auto linked = assigner.assign(cards);
  EXPECT_EQ(linked.size(), 8u);
  EXPECT_FALSE(linked.contains(8)) << "the R200";
  EXPECT_EQ(log.count("info", "R200"), 1) << log.text();
}

TEST(TopologyLinks, EightCardsWhoseIdsAreNotTheRowsGetNoneAndSaySoOnce) {
  // A card that failed to probe leaves its id to a later one: ids 0-6 and 9 are not rows 0-7.
  xpud::test::CapturedLog log;
  LinkAssigner assigner(shipped_table());
  std::vector<Card> cards;
  for (unsigned k = 0; k < 8; ++k)
    cards.push_back(Card{k == 7 ? 9 : k, bus(0x50 + k), "R300", {kR300, {}, {}}});
  EXPECT_THAT(assigner.assign(cards), IsEmpty());
  EXPECT_THAT(assigner.assign(cards), IsEmpty());
  EXPECT_EQ(log.count("info", "xpu9 (0000:57:00.0), but the rows of"), 1) << log.text();
  EXPECT_EQ(log.count("info", "are physical ids 0 to 7"), 1) << log.text();
}

TEST(TopologyLinks, WithoutATableNothingIsLinked) {
  xpud::test::CapturedLog log;
  LinkAssigner assigner(nullptr);
  std::vector<Card> cards;
  for (unsigned k = 0; k < 8; ++k) cards.push_back(Card{k, bus(0x10 + k), "R300", {kR300, {}, {}}});
  EXPECT_THAT(assigner.assign(cards), IsEmpty());
  EXPECT_THAT(assigner.assign(cards), IsEmpty());
  EXPECT_EQ(log.count("info", "no link table loaded; board R300"), 1) << log.text();
}

TEST(TopologyLinks, TwoChipsAtOneAddressAreRowsByTheirOwnIds) {
  auto table = parse_link_table(
      "[Dual]\nMatch = pci 1d22:3684 subsystem 0000:0000\nCards = 4\n"
      "Links.0 = 1\nLinks.1 = 0\nLinks.2 = 3\nLinks.3 = 2\n",
      "dual.quirk");
  ASSERT_TRUE(table) << table.error();
  LinkAssigner assigner(std::make_shared<const LinkTable>(std::move(*table)));
  const PciMatch k200{0x1d22, 0x3684, 0, 0};
  auto linked = assigner.assign(
      {Card{3, bus(0x60), "K200", {k200, {}, {}}}, Card{2, bus(0x60), "K200", {k200, {}, {}}},
       Card{0, bus(0x50), "K200", {k200, {}, {}}}, Card{1, bus(0x50), "K200", {k200, {}, {}}}});
  EXPECT_THAT(linked[0], ElementsAre(1u));
  EXPECT_THAT(linked[2], ElementsAre(3u));
  EXPECT_THAT(linked[3], ElementsAre(2u));
}

}  // namespace
}  // namespace xpud::topology
