// The one owner of a shim process's cards: the grace period, the generations and the deadline
// every role reads.
#include "k8s-shim/cards/card_state.h"

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "tests/support/card_builder.h"

namespace shim {
namespace {

using namespace std::chrono_literals;
using Clock = CardState::Clock;

const auto kStart = Clock::time_point{} + 1h;

xpu::DeviceView two_healthy_cards(bool present) {
  std::vector<xpu::DeviceInfo> cards = {xpu::test::card(0), xpu::test::card(1)};
  return present ? xpu::test::present(std::move(cards)) : xpu::test::absent(std::move(cards));
}

bool every_card_unreachable(const CardState::Snapshot& snapshot) {
  if (snapshot.view->devices.empty()) return false;
  for (const auto& device : snapshot.view->devices)
    if (device.healthy || device.health_reason != kXpudUnreachableReason ||
        device.health_reason_kind != kXpudUnreachableReasonKind)
      return false;
  return true;
}

TEST(CardState, TheWordsOtherChangesKeyOn) {
  EXPECT_EQ(kXpudUnreachableReasonKind, "xpud_unreachable");
  EXPECT_EQ(kXpudUnreachableReason, "xpud has been unreachable for longer than the grace period");
}

// PublishedView's test, from when the DRA role had the grace period to itself.
TEST(CardState, CardsStayAsLastReportedDuringTheGracePeriodThenTurnUnhealthy) {
  CardState cards(10s, kStart);
  cards.update(two_healthy_cards(true), kStart);
  auto present = cards.at(kStart + 1h);
  EXPECT_TRUE(present.view->devices[0].healthy);
  EXPECT_FALSE(present.changes_at);

  cards.update(two_healthy_cards(false), kStart + 1h);
  auto during = cards.at(kStart + 1h + 9s);
  EXPECT_TRUE(during.view->devices[0].healthy && during.view->devices[1].healthy);
  EXPECT_FALSE(during.xpud_lost);
  ASSERT_TRUE(during.changes_at);
  EXPECT_EQ(*during.changes_at, kStart + 1h + 10s);

  // Another "absent" view does not restart the clock.
  cards.update(two_healthy_cards(false), kStart + 1h + 5s);
  auto after = cards.at(kStart + 1h + 10s);
  EXPECT_TRUE(every_card_unreachable(after));
  EXPECT_TRUE(after.xpud_lost);
  EXPECT_FALSE(after.changes_at);

  cards.update(two_healthy_cards(true), kStart + 2h);
  EXPECT_TRUE(cards.at(kStart + 2h).view->devices[1].healthy);
}

TEST(CardState, EveryChangeIsOneGenerationAndTheSameViewTwiceIsNone) {
  CardState cards(10s, kStart);
  EXPECT_EQ(cards.at(kStart).generation, 1u);
  cards.update(two_healthy_cards(true), kStart + 1s);
  const auto first = cards.at(kStart + 1s);
  EXPECT_EQ(first.generation, 2u);

  cards.update(two_healthy_cards(true), kStart + 2s);
  const auto again = cards.at(kStart + 2s);
  EXPECT_EQ(again.generation, first.generation);
  EXPECT_EQ(again.view, first.view);  // the same object: nothing for a reader to build again

  auto sick = two_healthy_cards(true);
  sick.devices[1] = xpu::test::card(1).unhealthy("thermal trip");
  cards.update(sick, kStart + 3s);
  EXPECT_EQ(cards.at(kStart + 3s).generation, first.generation + 1);
  EXPECT_FALSE(cards.at(kStart + 3s).view->devices[1].healthy);
  // Asking again, later, changes nothing while xpud is present.
  EXPECT_EQ(cards.at(kStart + 1h).generation, first.generation + 1);
}

TEST(CardState, TheGracePeriodRunningOutIsAGenerationAtTheDeadline) {
  CardState cards(10s, kStart);
  cards.update(two_healthy_cards(true), kStart);
  cards.update(two_healthy_cards(false), kStart + 20s);
  // xpud leaving is news (the view says so) though every card keeps its health.
  const auto gone = cards.at(kStart + 20s);
  EXPECT_FALSE(gone.view->xpud_present);
  EXPECT_EQ(gone.changes_at, kStart + 30s);

  const auto just_before = cards.at(kStart + 30s - 1ns);
  EXPECT_EQ(just_before.generation, gone.generation);
  EXPECT_FALSE(every_card_unreachable(just_before));

  const auto past = cards.at(kStart + 30s);
  EXPECT_EQ(past.generation, gone.generation + 1);
  EXPECT_TRUE(every_card_unreachable(past));
  EXPECT_EQ(past.changes_at, std::nullopt);  // nothing left to wait for
  // Later reads, and another "still gone" view, are the same answer.
  EXPECT_EQ(cards.at(kStart + 1h).generation, past.generation);
  cards.update(two_healthy_cards(false), kStart + 1h);
  EXPECT_EQ(cards.at(kStart + 1h).generation, past.generation);
  EXPECT_EQ(cards.at(kStart + 1h).changes_at, std::nullopt);
}

TEST(CardState, RecoveryIsANewGenerationWithTheHealthXpudReports) {
  CardState cards(5s, kStart);
  cards.update(two_healthy_cards(false), kStart);
  const auto lost = cards.at(kStart + 5s);
  ASSERT_TRUE(lost.xpud_lost);

  auto back = two_healthy_cards(true);
  back.devices[0] = xpu::test::card(0).unhealthy("device lost");
  cards.update(back, kStart + 6s);
  const auto recovered = cards.at(kStart + 6s);
  EXPECT_EQ(recovered.generation, lost.generation + 1);
  EXPECT_FALSE(recovered.xpud_lost);
  EXPECT_EQ(recovered.changes_at, std::nullopt);
  EXPECT_EQ(recovered.view->devices[0].health_reason, "device lost");
  EXPECT_TRUE(recovered.view->devices[1].healthy);

  // Gone again: a new grace period from the new departure.
  cards.update(xpu::test::absent(back.devices), kStart + 1h);
  EXPECT_EQ(cards.at(kStart + 1h).changes_at, kStart + 1h + 5s);
}

TEST(CardState, XpudBackBeforeTheDeadlineNeverShowsUnhealthy) {
  CardState cards(5s, kStart);
  cards.update(two_healthy_cards(true), kStart);
  cards.update(two_healthy_cards(false), kStart + 1s);
  for (auto t = kStart + 1s; t < kStart + 6s; t += 500ms) {
    if (t == kStart + 4s) cards.update(two_healthy_cards(true), t);
    EXPECT_FALSE(cards.at(t).xpud_lost) << (t - kStart).count();
    EXPECT_TRUE(cards.at(t).view->devices[0].healthy);
  }
  // The old deadline passes without a word.
  const auto later = cards.at(kStart + 1h);
  EXPECT_FALSE(later.xpud_lost);
  EXPECT_EQ(later.changes_at, std::nullopt);
  EXPECT_TRUE(later.view->devices[0].healthy && later.view->devices[1].healthy);
}

TEST(CardState, XpudNeverSeenIsLostAfterTheGracePeriodFromTheStart) {
  CardState cards(10s, kStart);
  EXPECT_EQ(cards.at(kStart).changes_at, kStart + 10s);
  EXPECT_FALSE(cards.at(kStart + 10s - 1ns).xpud_lost);
  // No cards to turn unhealthy, but readers learn xpud is lost (the device plugin logs it).
  const auto lost = cards.at(kStart + 10s);
  EXPECT_TRUE(lost.xpud_lost);
  EXPECT_EQ(lost.generation, 2u);
  EXPECT_TRUE(lost.view->devices.empty());
}

TEST(CardState, NoGracePeriodMeansUnhealthyAsSoonAsXpudGoes) {
  CardState cards(0s, kStart);
  EXPECT_TRUE(cards.at(kStart).xpud_lost);
  cards.update(two_healthy_cards(true), kStart + 1s);
  EXPECT_FALSE(cards.at(kStart + 1s).xpud_lost);
  cards.update(two_healthy_cards(false), kStart + 2s);
  EXPECT_TRUE(every_card_unreachable(cards.at(kStart + 2s)));
}

// Two readers whose clocks were read a moment apart: the later answer stands for both.
TEST(CardState, TimeNeverGoesBack) {
  CardState cards(10s, kStart);
  cards.update(two_healthy_cards(false), kStart);
  const auto late = cards.at(kStart + 10s);
  ASSERT_TRUE(late.xpud_lost);
  const auto early = cards.at(kStart + 9s);
  EXPECT_EQ(early.generation, late.generation);
  EXPECT_TRUE(early.xpud_lost);
  // A view stamped before the last read counts from the last read.
  cards.update(two_healthy_cards(true), kStart + 11s);
  cards.update(two_healthy_cards(false), kStart + 5s);
  EXPECT_EQ(cards.at(kStart + 11s).changes_at, kStart + 21s);
}

// The watcher's thread updates while two others read, as in every role (ThreadSanitizer runs
// this); each reader sees its generations only grow, and the cards of one generation never
// change.
TEST(CardState, ReadersOnOtherThreadsSeeGenerationsInOrder) {
  CardState cards(1ms, kStart);
  constexpr int kUpdates = 2000;
  std::atomic<bool> done{false};
  auto reader = [&] {
    std::uint64_t last = 0;
    std::shared_ptr<const xpu::DeviceView> last_view;
    bool ordered = true;
    for (int i = 0; !done.load() || i < 10; ++i) {
      const auto snapshot = cards.at(kStart + std::chrono::microseconds(i));
      ordered = ordered && snapshot.generation >= last &&
                (snapshot.generation != last || snapshot.view == last_view);
      last = snapshot.generation;
      last_view = snapshot.view;
    }
    EXPECT_TRUE(ordered);
  };
  std::thread first(reader);
  std::thread second(reader);
  for (int i = 0; i < kUpdates; ++i)
    cards.update(two_healthy_cards(i % 3 != 0), kStart + std::chrono::microseconds(i * 700));
  done.store(true);
  first.join();
  second.join();
  EXPECT_GE(cards.at(kStart + 1h).generation, 2u);
}

}  // namespace
}  // namespace shim
