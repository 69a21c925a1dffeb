// The feed a role gets its cards from, against the real xpud (sim backend) on a private bus: what
// xpud lists reaches the feed's state and wakes the role's loop, the grace period applies to it,
// the one write reaches xpud, and a Watch that has ended calls the role back no more.
#include "k8s-shim/cards/card_feed.h"

#include <poll.h>

#include <atomic>
#include <memory>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sdbus-c++/sdbus-c++.h>

#include "common/names.h"
#include "tests/support/child_process.h"
#include "tests/support/private_bus.h"
#include "tests/support/wait.h"

namespace shim {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using xpu::test::wait_until;
using Clock = CardFeed::Clock;

constexpr unsigned kSimCards = 8;  // the sim backend's default

bool readable(int fd) {
  pollfd entry{fd, POLLIN, 0};
  return ::poll(&entry, 1, 0) == 1 && (entry.revents & POLLIN);
}

class CardFeedTest : public ::testing::Test {
 protected:
  void start_xpud() {
    const auto config = dir_.path() / "xpud.conf";
    xpu::test::write_file(config, "[daemon]\nbackend = sim\n[sampling]\ninterval_ms = 200\n");
    xpud_ = std::make_unique<xpu::test::ChildProcess>(
        std::vector<std::string>{xpu::test::binary_path("xpud/xpud").string(), "--bus-address",
                                 bus_.address(), "--config", config.string()},
        dir_.path() / "xpud.log");
  }

  void set_health(unsigned index, const std::string& health, const std::string& reason) {
    auto connection = sdbus::createSessionBusConnectionWithAddress(bus_.address());
    sdbus::createProxy(*connection, std::string(xpu::names::kBusName),
                       std::string(xpu::names::kManagerPath))
        ->callMethod("SetHealth")
        .onInterface(std::string(xpu::names::kSimulatorInterface))
        .withArguments(index, health, reason);
  }

  bool all_cards_present(const CardFeed& feed) const {
    const auto snapshot = feed.at(Clock::now());
    return snapshot.view->xpud_present && snapshot.view->devices.size() == kSimCards;
  }

  xpu::ClientOptions options() const { return {bus_.address(), 2s}; }

  xpu::test::TempDir dir_;
  xpu::test::PrivateBus bus_;
  std::unique_ptr<xpu::test::ChildProcess> xpud_;
};

TEST_F(CardFeedTest, XpudsCardsReachTheStateThenTheListenerThenTheWakeUp) {
  start_xpud();
  CardFeed feed(options(), 10s, Clock::now());
  // What the listener finds in the state: the view it is called for is already there.
  std::atomic<std::size_t> cards_in_listener{0};
  const CardFeed::Watch watching = feed.watch(
      [&](Clock::time_point now) { cards_in_listener = feed.at(now).view->devices.size(); });
  ASSERT_TRUE(wait_until([&] { return all_cards_present(feed); }, 10s)) << xpud_->output();
  ASSERT_TRUE(wait_until([&] { return cards_in_listener == kSimCards; }, 5s));
  ASSERT_TRUE(wait_until([&] { return readable(feed.wake_fd()); }, 5s));
  EXPECT_FALSE(feed.at(Clock::now()).xpud_lost);
  EXPECT_EQ(feed.cards_at(Clock::now()).size(), kSimCards);
  EXPECT_EQ(feed.state().at(Clock::now()).generation, feed.at(Clock::now()).generation);

  // A card's health as xpud reports it, in the state and with a wake-up.
  feed.clear_wake();
  set_health(2, "Unhealthy", "test says so");
  ASSERT_TRUE(wait_until([&] { return !feed.cards_at(Clock::now())[2].healthy; }, 5s));
  ASSERT_TRUE(wait_until([&] { return readable(feed.wake_fd()); }, 5s));
  EXPECT_EQ(feed.cards_at(Clock::now())[2].health_reason, "test says so");
}

TEST_F(CardFeedTest, NoXpudMeansEveryCardLostOnceTheGracePeriodIsOver) {
  // No grace at all: lost with the first view that says xpud is not there.
  CardFeed feed(options(), 0s, Clock::now());
  std::atomic<int> calls{0};
  const CardFeed::Watch watching = feed.watch([&](Clock::time_point) { ++calls; });
  ASSERT_TRUE(wait_until([&] { return calls > 0; }, 10s));
  const auto snapshot = feed.at(Clock::now());
  EXPECT_FALSE(snapshot.view->xpud_present);
  EXPECT_TRUE(snapshot.xpud_lost);
  EXPECT_TRUE(readable(feed.wake_fd()));
}

TEST_F(CardFeedTest, TheOneWriteReachesXpudOnlyWhileWatching) {
  start_xpud();
  CardFeed feed(options(), 10s, Clock::now());
  auto before = feed.configure_virtual_functions(0, 2, 2s);
  ASSERT_FALSE(before);
  EXPECT_THAT(before.error(), HasSubstr("not watching xpud"));
  {
    const CardFeed::Watch watching = feed.watch();
    ASSERT_TRUE(wait_until([&] { return all_cards_present(feed); }, 10s)) << xpud_->output();
    // xpud's own answer, error name and all: there is no card 99.
    auto answered = feed.configure_virtual_functions(99, 2, 2s);
    ASSERT_FALSE(answered);
    EXPECT_THAT(answered.error(), HasSubstr(std::string(xpu::names::kErrorNoSuchDevice)));
  }
  auto after = feed.configure_virtual_functions(0, 2, 2s);
  ASSERT_FALSE(after);
  EXPECT_THAT(after.error(), HasSubstr("not watching xpud"));
}

TEST_F(CardFeedTest, AnEndedWatchCallsBackNoMoreAndTheStateKeepsTheLastView) {
  start_xpud();
  CardFeed feed(options(), 10s, Clock::now());
  std::atomic<int> calls{0};
  {
    const CardFeed::Watch watching = feed.watch([&](Clock::time_point) { ++calls; });
    ASSERT_TRUE(wait_until([&] { return all_cards_present(feed); }, 10s)) << xpud_->output();
  }
  const int seen = calls.load();
  set_health(1, "Unhealthy", "after the watch");
  EXPECT_TRUE(all_cards_present(feed));
  EXPECT_TRUE(feed.cards_at(Clock::now())[1].healthy);

  // The feed may follow xpud again; once the new watcher has reported the change, the ended
  // Watch's listener has still not been called.
  const CardFeed::Watch again = feed.watch();
  ASSERT_TRUE(wait_until([&] { return !feed.cards_at(Clock::now())[1].healthy; }, 5s));
  EXPECT_EQ(calls.load(), seen);
}

}  // namespace
}  // namespace shim
