#include "xpud/sampling/device_table.h"

#include <gtest/gtest.h>

namespace xpud {
namespace {

DeviceState card(unsigned index, std::string uuid, bool healthy = true, std::string reason = "") {
  DeviceState state;
  state.identity.index = index;
  state.identity.uuid = std::move(uuid);
  state.identity.model = "R200";
  state.healthy = healthy;
  state.health_reason = std::move(reason);
  if (!healthy) state.health_reason_kind = "driver_fault";
  return state;
}

std::shared_ptr<const Snapshot> snapshot(std::vector<DeviceState> devices,
                                         std::string driver_version = "5.0") {
  auto s = std::make_shared<Snapshot>();
  s->devices = std::move(devices);
  s->backend = "sim";
  s->driver_version = std::move(driver_version);
  return s;
}

DeviceTable table() {
  return DeviceTable(ManagerModel{"sim", "", "5.0"});
}

TEST(DeviceTable, TheFirstSnapshotAddsEveryCard) {
  DeviceTable t = table();
  auto changes = t.apply(snapshot({card(0, "u0"), card(1, "u1", false, "state ERROR")}));
  EXPECT_TRUE(changes.removed.empty());
  ASSERT_EQ(changes.cards.size(), 2U);
  EXPECT_EQ(changes.cards[0].index, 0U);
  EXPECT_EQ(changes.cards[0].kind, CardChange::Kind::kAdded);
  EXPECT_EQ(changes.cards[1].kind, CardChange::Kind::kAdded);
  EXPECT_TRUE(changes.device_count);
  EXPECT_TRUE(changes.healthy_device_count);
  EXPECT_FALSE(changes.driver_version);
  EXPECT_EQ(t.device_count(), 2U);
  EXPECT_EQ(t.healthy_device_count(), 1U);
  EXPECT_EQ(t.find(1)->health_reason, "state ERROR");
  // A card that comes unhealthy has not become so: no transition counted.
  EXPECT_EQ(t.find(1)->became_unhealthy, 0U);
}

TEST(DeviceTable, EachFlipIsCountedOnceAndAReasonAloneIsNoFlip) {
  DeviceTable t = table();
  t.apply(snapshot({card(0, "u0")}));
  auto changes = t.apply(snapshot({card(0, "u0", false, "state ERROR")}));
  ASSERT_EQ(changes.cards.size(), 1U);
  EXPECT_EQ(changes.cards[0].kind, CardChange::Kind::kHealth);
  EXPECT_TRUE(changes.healthy_device_count);
  changes = t.apply(snapshot({card(0, "u0", false, "state IN_RESET")}));
  ASSERT_EQ(changes.cards.size(), 1U);
  EXPECT_EQ(changes.cards[0].kind, CardChange::Kind::kReason);
  EXPECT_FALSE(changes.healthy_device_count);
  EXPECT_TRUE(t.apply(snapshot({card(0, "u0", false, "state IN_RESET")})).cards.empty());
  t.apply(snapshot({card(0, "u0")}));
  EXPECT_EQ(t.find(0)->became_unhealthy, 1U);
  EXPECT_EQ(t.find(0)->became_healthy, 1U);
  EXPECT_EQ(t.find(0)->health_reason, "");
}

TEST(DeviceTable, AHotSwapRemovesTheOldCardBeforeAddingTheNew) {
  DeviceTable t = table();
  t.apply(snapshot({card(0, "u0"), card(1, "u1")}));
  t.apply(snapshot({card(0, "u0", false, "gone bad"), card(1, "u1")}));
  auto changes = t.apply(snapshot({card(0, "u0-new")}));
  ASSERT_EQ(changes.removed.size(), 2U);
  EXPECT_EQ(changes.removed[0].uuid, "u0");
  EXPECT_EQ(changes.removed[1].uuid, "u1");
  ASSERT_EQ(changes.cards.size(), 1U);
  EXPECT_EQ(changes.cards[0].kind, CardChange::Kind::kAdded);
  EXPECT_TRUE(changes.device_count);
  // The new card starts its own count.
  EXPECT_EQ(t.find(0)->identity.uuid, "u0-new");
  EXPECT_EQ(t.find(0)->became_unhealthy, 0U);
  EXPECT_EQ(t.find(1), nullptr);
}

TEST(DeviceTable, ManagerFactsFollowTheSnapshot) {
  DeviceTable t = table();
  auto first = std::make_shared<Snapshot>();
  first->backend = "xpuml";
  first->library_path = "/usr/lib/libxpuml.so.1";
  first->driver_version = "5.1";
  first->driver_stalled = true;
  auto changes = t.apply(first);
  EXPECT_TRUE(changes.backend);
  EXPECT_TRUE(changes.library_path);
  EXPECT_TRUE(changes.driver_version);
  EXPECT_TRUE(changes.driver_stalled);
  EXPECT_FALSE(changes.device_count);
  EXPECT_EQ(t.manager().backend, "xpuml");
  EXPECT_EQ(t.manager().library_path, "/usr/lib/libxpuml.so.1");
  EXPECT_EQ(t.manager().driver_version, "5.1");
  EXPECT_TRUE(t.driver_stalled());
  // A snapshot that does not name its backend (none yet) leaves backend and library alone.
  auto second = std::make_shared<Snapshot>(*first);
  second->backend.clear();
  second->library_path.clear();
  changes = t.apply(second);
  EXPECT_FALSE(changes.backend);
  EXPECT_FALSE(changes.library_path);
  EXPECT_EQ(t.manager().library_path, "/usr/lib/libxpuml.so.1");
}

TEST(DeviceTable, PcieFiguresAndWarningsAreAChangeOfTheirOwnAndAStalledDriverKeepsThem) {
  DeviceTable t = table();
  auto healthy_card = card(0, "u0");
  healthy_card.pcie.speed = 16000000000;
  healthy_card.pcie.aer_fatal = 0;
  t.apply(snapshot({healthy_card}));
  EXPECT_EQ(t.find(0)->pcie.speed, 16000000000U);

  auto downtrained = healthy_card;
  downtrained.pcie.speed = 8000000000;
  downtrained.health_warnings = {{"pcie_link_downtrained", "PCIe link downtrained"}};
  auto changes = t.apply(snapshot({downtrained}));
  ASSERT_EQ(changes.cards.size(), 1U);
  EXPECT_EQ(changes.cards[0].kind, CardChange::Kind::kPcie);
  EXPECT_FALSE(changes.healthy_device_count);
  EXPECT_EQ(t.find(0)->health_warnings, downtrained.health_warnings);
  EXPECT_EQ(t.find(0)->became_unhealthy, 0U);
  // The same again: nothing to tell.
  EXPECT_TRUE(t.apply(snapshot({downtrained})).cards.empty());

  // A stalled driver read nothing: the figures stand until the card is read again.
  auto stalled = snapshot({card(0, "u0")});
  const_cast<Snapshot&>(*stalled).driver_stalled = true;
  EXPECT_TRUE(t.apply(stalled).cards.empty());
  EXPECT_EQ(t.find(0)->pcie.speed, 8000000000U);

  changes = t.apply(snapshot({healthy_card}));
  ASSERT_EQ(changes.cards.size(), 1U);
  EXPECT_EQ(changes.cards[0].kind, CardChange::Kind::kPcie);
  EXPECT_TRUE(t.find(0)->health_warnings.empty());
}

}  // namespace
}  // namespace xpud
