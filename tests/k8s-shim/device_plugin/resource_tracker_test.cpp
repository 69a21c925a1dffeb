#include "k8s-shim/device_plugin/resource_tracker.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "tests/support/card_builder.h"

namespace shim {
namespace {

using namespace std::chrono_literals;
using Clock = ResourceTracker::Clock;

using xpu::test::absent;
using xpu::test::card;
using xpu::test::present;

std::vector<bool> health(const ResourceFeed& feed) {
  std::vector<bool> out;
  for (const auto& d : feed.latest().state->devices) out.push_back(d.healthy);
  return out;
}

// Whether the kubelet is told xpud is lost: every card Unhealthy for that reason.
bool reports_xpud_lost(const ResourceFeed& feed) {
  const auto& devices = feed.latest().state->devices;
  return !devices.empty() && std::all_of(devices.begin(), devices.end(), [](const auto& d) {
    return !d.healthy &&
           d.unhealthy_reason == "xpud has been unreachable for longer than the grace period";
  });
}

// The role's wiring: the watcher hands the view to the CardState, then the tracker plans.
struct Role {
  CardState cards;
  ResourceTracker tracker;

  Role(ResourceConfig config, Clock::duration grace, Clock::time_point start)
      : cards(grace, start), tracker(std::move(config), cards, start) {}
  void watcher_hands(const xpu::DeviceView& view, Clock::time_point now) {
    cards.update(view, now);
    tracker.refresh(now);
  }
};

TEST(ResourceTracker, GracePeriodThenRecovery) {
  const auto t0 = Clock::time_point{} + 1000s;
  Role role({}, 10s, t0);
  auto& tracker = role.tracker;
  auto feeds = tracker.feeds();
  ASSERT_EQ(feeds.size(), 1u);
  auto feed = feeds[0];
  EXPECT_TRUE(feed->latest().state->devices.empty());
  EXPECT_EQ(tracker.next_deadline(), t0 + 10s);  // never seen xpud yet

  role.watcher_hands(present({card(0), card(1)}), t0 + 1s);
  EXPECT_EQ(health(*feed), (std::vector<bool>{true, true}));
  EXPECT_EQ(tracker.next_deadline(), std::nullopt);

  // xpud goes away: the last known health stands for the grace period.
  role.watcher_hands(absent({card(0), card(1)}), t0 + 20s);
  EXPECT_EQ(tracker.next_deadline(), t0 + 30s);
  tracker.refresh(t0 + 30s - 1ms);
  EXPECT_EQ(health(*feed), (std::vector<bool>{true, true}));
  EXPECT_FALSE(reports_xpud_lost(*feed));
  const auto generation = feed->latest().generation;
  tracker.refresh(t0 + 30s);
  EXPECT_TRUE(reports_xpud_lost(*feed));
  EXPECT_EQ(health(*feed), (std::vector<bool>{false, false}));
  EXPECT_EQ(feed->latest().generation, generation + 1);
  EXPECT_EQ(tracker.next_deadline(), std::nullopt);  // nothing left to wait for

  // Another "still gone" view does not restart the grace period or change anything.
  role.watcher_hands(absent({card(0), card(1)}), t0 + 40s);
  EXPECT_EQ(feed->latest().generation, generation + 1);

  role.watcher_hands(present({card(0), card(1)}), t0 + 50s);
  EXPECT_FALSE(reports_xpud_lost(*feed));
  EXPECT_EQ(health(*feed), (std::vector<bool>{true, true}));
}

TEST(ResourceTracker, ReturnWithinGraceKeepsDevicesHealthy) {
  const auto t0 = Clock::time_point{} + 1000s;
  Role role({}, 5s, t0);
  auto feed = role.tracker.feeds().at(0);
  role.watcher_hands(present({card(0)}), t0);
  role.watcher_hands(absent({card(0)}), t0 + 1s);
  role.watcher_hands(present({card(0)}), t0 + 4s);
  role.tracker.refresh(t0 + 100s);
  EXPECT_EQ(health(*feed), std::vector<bool>{true});
  EXPECT_EQ(role.tracker.next_deadline(), std::nullopt);
}

TEST(ResourceTracker, PublishesOnlyChanges) {
  const auto t0 = Clock::time_point{} + 1000s;
  Role role({}, 5s, t0);
  auto feed = role.tracker.feeds().at(0);
  role.watcher_hands(present({card(0)}), t0);
  const auto generation = feed->latest().generation;
  role.watcher_hands(present({card(0)}), t0 + 1s);
  role.tracker.refresh(t0 + 2s);
  EXPECT_EQ(feed->latest().generation, generation);
  role.watcher_hands(present({card(0).unhealthy("test fault")}), t0 + 3s);
  EXPECT_EQ(feed->latest().generation, generation + 1);
  EXPECT_EQ(feed->latest().state->devices.at(0).unhealthy_reason, "test fault");
}

// The tracker plans from the CardState it is given, not from what a caller hands it: a view the
// CardState has (from the watcher) reaches the feeds at the next refresh, whichever thread calls.
TEST(ResourceTracker, PlansFromTheCardState) {
  const auto t0 = Clock::time_point{} + 1000s;
  Role role({}, 5s, t0);
  auto feed = role.tracker.feeds().at(0);
  role.cards.update(present({card(0), card(1)}), t0 + 1s);
  EXPECT_TRUE(feed->latest().state->devices.empty());
  role.tracker.refresh(t0 + 1s);
  EXPECT_EQ(health(*feed), (std::vector<bool>{true, true}));
}

TEST(ResourceTracker, PerModelResourcesAppearAndStay) {
  const auto t0 = Clock::time_point{} + 1000s;
  Role role({"kunlunxin.com/xpu", true}, 5s, t0);
  auto& tracker = role.tracker;
  EXPECT_TRUE(tracker.feeds().empty());  // nothing known before xpud answers
  role.watcher_hands(present({card(0), card(1).model("R300")}), t0);
  auto feeds = tracker.feeds();
  ASSERT_EQ(feeds.size(), 2u);
  EXPECT_EQ(feeds[0]->resource_name(), "kunlunxin.com/R200");
  EXPECT_EQ(feeds[1]->resource_name(), "kunlunxin.com/R300");
  role.watcher_hands(present({card(0)}), t0 + 1s);
  feeds = tracker.feeds();
  ASSERT_EQ(feeds.size(), 2u);
  EXPECT_TRUE(feeds[1]->latest().state->devices.empty());
  EXPECT_EQ(feeds[1]->socket_name(), "kunlunxin-xpu-r300.sock");
}

TEST(ResourceTracker, CloseAllEndsWaiters) {
  Role role({}, 5s, Clock::now());
  auto feed = role.tracker.feeds().at(0);
  role.tracker.close_all();
  EXPECT_TRUE(feed->closed());
  EXPECT_EQ(feed->wait_newer(feed->latest().generation, 10s), std::nullopt);  // returns at once
}

std::vector<std::string> ids(const ResourceFeed& feed) {
  std::vector<std::string> out;
  for (const auto& d : feed.latest().state->devices) out.push_back(d.id);
  return out;
}

TEST(ResourceTracker, CardsHeldThroughDraClaimsAreNotAdvertisedUntilReleased) {
  const auto t0 = Clock::time_point{} + 1000s;
  Role role({}, 10s, t0);
  role.watcher_hands(present({card(0), card(1), card(2)}), t0 + 1s);
  auto feed = role.tracker.feeds().at(0);
  ASSERT_EQ(ids(*feed), (std::vector<std::string>{"uuid-0", "uuid-1", "uuid-2"}));

  // A pod holds card 1 through a claim (by its device name), card 2 by its CDI name.
  role.tracker.set_held(HeldCards{.uuids = {"uuid-2"}, .indices = {1}}, 1, t0 + 2s);
  EXPECT_EQ(ids(*feed), (std::vector<std::string>{"uuid-0"}));
  // News from xpud keeps them out.
  role.watcher_hands(present({card(0), card(1), card(2).unhealthy("thermal")}), t0 + 3s);
  EXPECT_EQ(ids(*feed), (std::vector<std::string>{"uuid-0"}));

  role.tracker.set_held({}, 2, t0 + 4s);  // released
  EXPECT_EQ(ids(*feed), (std::vector<std::string>{"uuid-0", "uuid-1", "uuid-2"}));
  EXPECT_EQ(health(*feed), (std::vector<bool>{true, true, false}));
}

TEST(ResourceTracker, AnOlderAnswerOfTheWatchNeverOverridesANewerOne) {
  // The role's loop may set generation 1 after a decision on a gRPC thread set generation 2.
  const auto t0 = Clock::time_point{} + 1000s;
  Role role({}, 10s, t0);
  role.watcher_hands(present({card(0), card(1)}), t0 + 1s);
  auto feed = role.tracker.feeds().at(0);
  role.tracker.set_held(HeldCards{.uuids = {}, .indices = {1}}, 2, t0 + 2s);
  role.tracker.set_held({}, 1, t0 + 2s);
  EXPECT_EQ(ids(*feed), (std::vector<std::string>{"uuid-0"}));
  role.tracker.set_held({}, 2, t0 + 3s);  // the same generation again: nothing new
  EXPECT_EQ(ids(*feed), (std::vector<std::string>{"uuid-0"}));
  role.tracker.set_held({}, 3, t0 + 4s);
  EXPECT_EQ(ids(*feed), (std::vector<std::string>{"uuid-0", "uuid-1"}));
}

TEST(ResourceTracker, ACardHeldThroughDraGivesNoReplicaOrMemoryUnit) {
  const auto t0 = Clock::time_point{} + 1000s;
  Role replicas(ResourceConfig{.share_replicas = 2}, 10s, t0);
  Role memory(ResourceConfig{.share_memory_unit_mib = 1024}, 10s, t0);
  const auto cards =
      present({card(0).memory_total_bytes(2ULL << 30), card(1).memory_total_bytes(2ULL << 30)});
  for (Role* role : {&replicas, &memory}) {
    role->watcher_hands(cards, t0 + 1s);
    role->tracker.set_held(HeldCards{.uuids = {}, .indices = {0}}, 1, t0 + 2s);
  }
  EXPECT_EQ(ids(*replicas.tracker.feeds().at(0)),
            (std::vector<std::string>{"uuid-1::0", "uuid-1::1"}));
  EXPECT_EQ(ids(*memory.tracker.feeds().at(0)),
            (std::vector<std::string>{"uuid-1::m0", "uuid-1::m1"}));
}

}  // namespace
}  // namespace shim
