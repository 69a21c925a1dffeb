// The node-status writer against an in-memory Node: the request bodies, the condition's times as
// the kubelet's own conditions keep them, the heartbeat, the ready label's ownership, retries,
// and the reporter's thread with the SIGTERM path's release.
#include "k8s-shim/node_status/node_status_writer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "k8s-shim/node_status/node_status_options.h"
#include "k8s-shim/node_status/node_status_reporter.h"
#include "tests/k8s-shim/node_status/fake_node_server.h"
#include "tests/support/card_builder.h"
#include "tests/support/wait.h"

namespace shim::node_status {
namespace {

using namespace std::chrono_literals;
using Clock = NodeStatusWriter::Clock;
using WallClock = NodeStatusWriter::WallClock;
using testing::FakeNodeServer;
using xpu::test::card;
using xpu::test::present;

const auto kMorning = WallClock::time_point(std::chrono::seconds(1796360634));
const std::string kMorningText = "2026-12-04T05:03:54Z";
const std::string kManager(kDevicePluginFieldManager);

XpuCondition healthy() {
  return *xpu_condition(present({card(0), card(1)}), false, 30s);
}
XpuCondition faulty(const std::string& reason = "driver fault: card lost") {
  return *xpu_condition(present({card(0), card(1).unhealthy(reason)}), false, 30s);
}

class NodeStatusWriterTest : public ::testing::Test {
 protected:
  FakeNodeServer server_;
  NodeApi api_{server_, "node-a", kManager};
  NodeStatusWriter writer_{api_};
  Clock::time_point now_ = Clock::now();

  Clock::time_point reconcile(WallClock::time_point wall) { return writer_.reconcile(now_, wall); }
  std::size_t count(const std::string& method) const {
    std::size_t n = 0;
    for (const auto& request : server_.requests()) n += request.method == method;
    return n;
  }
};

TEST(NodeApiBodies, TheConditionAppliedToTheStatusSubresourceAsTheRolesManager) {
  FakeNodeServer server;
  NodeApi api(server, "node-a", kManager);
  ASSERT_TRUE(api.apply_condition({.status = "False",
                                   .reason = "XPUUnhealthy",
                                   .message = "1 of 8 cards unhealthy: xpu3: driver fault",
                                   .last_heartbeat_time = "2026-12-06T10:00:05Z",
                                   .last_transition_time = "2026-12-06T10:00:00Z"}));
  const auto sent = server.requests().at(0);
  EXPECT_EQ(sent.method, "PATCH");
  EXPECT_EQ(sent.target,
            "/api/v1/nodes/node-a/status?fieldManager=xpu-k8s-shim-device-plugin&force=true");
  EXPECT_EQ(sent.content_type, "application/apply-patch+yaml");
  EXPECT_EQ(nlohmann::json::parse(sent.body), nlohmann::json::parse(R"({
    "apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"},
    "status": {"conditions": [{"type": "XPUHealthy", "status": "False", "reason": "XPUUnhealthy",
      "message": "1 of 8 cards unhealthy: xpu3: driver fault",
      "lastHeartbeatTime": "2026-12-06T10:00:05Z", "lastTransitionTime": "2026-12-06T10:00:00Z"}]}
  })"));
}

TEST(NodeApiBodies, TheLabelAppliedToTheNodeAndLeftOutToRelease) {
  EXPECT_EQ(nlohmann::json::parse(ready_label_apply_body("node-a", true)),
            nlohmann::json::parse(R"({"apiVersion": "v1", "kind": "Node",
              "metadata": {"name": "node-a", "labels": {"kunlunxin.com/xpu.ready": "true"}}})"));
  EXPECT_EQ(nlohmann::json::parse(ready_label_apply_body("node-a", false)),
            nlohmann::json::parse(
                R"({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}})"));
  FakeNodeServer server;
  NodeApi api(server, "node-a", kManager);
  ASSERT_TRUE(api.apply_ready_label(true));
  EXPECT_EQ(server.requests().at(0).target,
            "/api/v1/nodes/node-a?fieldManager=xpu-k8s-shim-device-plugin&force=true");
}

TEST(NodeApiBodies, InvalidUtf8FromXpudIsReplacedNotThrownOn) {
  const std::string body = condition_apply_body("node-a", {.status = "False",
                                                           .reason = "XPUUnhealthy",
                                                           .message = "bad \xff byte",
                                                           .last_heartbeat_time = {},
                                                           .last_transition_time = {}});
  EXPECT_NE(body.find("bad \xef\xbf\xbd byte"), std::string::npos) << body;
}

TEST(NodeApiBodies, ANodeNameThatIsNoNameIsNeverSent) {
  FakeNodeServer server;
  NodeApi api(server, "../../namespaces", kManager);
  auto result = api.apply_ready_label(true);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().reason, "Invalid");
  EXPECT_TRUE(server.requests().empty());
}

TEST(ParseXpuCondition, FindsItsConditionAmongTheKubelets) {
  FakeNodeServer server;
  server.put_condition({{"type", "XPUHealthy"},
                        {"status", "False"},
                        {"lastTransitionTime", "2026-12-01T00:00:00Z"}});
  auto parsed = parse_xpu_condition(server.node().dump());
  ASSERT_TRUE(parsed) << parsed.error();
  ASSERT_TRUE(parsed.value());
  EXPECT_EQ(*parsed.value(), (ObservedCondition{"False", "2026-12-01T00:00:00Z"}));
  auto none = parse_xpu_condition(FakeNodeServer().node().dump());
  ASSERT_TRUE(none);
  EXPECT_FALSE(none.value());
}

TEST(ParseXpuCondition, AMalformedAnswerNamesTheField) {
  auto wrong = parse_xpu_condition(R"({"kind": "Node", "status": {"conditions": {"type": 1}}})");
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().find("status.conditions"), std::string::npos) << wrong.error();
  auto other = parse_xpu_condition(R"({"kind": "Pod"})");
  ASSERT_FALSE(other);
  EXPECT_FALSE(parse_xpu_condition("not json"));
  auto typed = parse_xpu_condition(
      R"({"kind": "Node", "status": {"conditions": [{"type": "XPUHealthy", "status": 3}]}})");
  ASSERT_FALSE(typed);
  EXPECT_NE(typed.error().find("status.conditions[0].status"), std::string::npos) << typed.error();
}

TEST_F(NodeStatusWriterTest, WritesTheConditionBesideTheKubeletsAndReleasesTheLabelAtStart) {
  writer_.set_condition(healthy(), kMorning);
  reconcile(kMorning);
  const auto condition = server_.condition("XPUHealthy");
  ASSERT_TRUE(condition);
  EXPECT_EQ((*condition)["status"], "True");
  EXPECT_EQ((*condition)["reason"], "XPUsHealthy");
  EXPECT_EQ((*condition)["lastTransitionTime"], kMorningText);
  EXPECT_EQ((*condition)["lastHeartbeatTime"], kMorningText);
  // The kubelet's condition as it was.
  const auto ready = server_.condition("Ready");
  ASSERT_TRUE(ready);
  EXPECT_EQ((*ready)["lastHeartbeatTime"], "2026-12-06T10:00:00Z");
  // Not serving yet: the label is applied as absent (one left by a role killed without its
  // SIGTERM path is removed).
  EXPECT_FALSE(server_.label("kunlunxin.com/xpu.ready"));
  EXPECT_EQ(count("GET"), 1U);
  EXPECT_EQ(count("PATCH"), 2U);
}

TEST_F(NodeStatusWriterTest, KeepsTheTransitionTimeOfTheNodesConditionWhenTheStatusIsTheSame) {
  // A restarted role: the node says True since yesterday.
  server_.put_condition({{"type", "XPUHealthy"},
                         {"status", "True"},
                         {"reason", "XPUsHealthy"},
                         {"lastTransitionTime", "2026-12-03T00:00:00Z"}});
  writer_.set_condition(healthy(), kMorning);
  reconcile(kMorning);
  EXPECT_EQ((*server_.condition("XPUHealthy"))["lastTransitionTime"], "2026-12-03T00:00:00Z");
  EXPECT_EQ((*server_.condition("XPUHealthy"))["lastHeartbeatTime"], kMorningText);
}

TEST_F(NodeStatusWriterTest, ANewStatusMovesTheTransitionTimeANewMessageDoesNot) {
  server_.put_condition(
      {{"type", "XPUHealthy"}, {"status", "True"}, {"lastTransitionTime", "2026-12-03T00:00:00Z"}});
  writer_.set_condition(faulty(), kMorning);
  reconcile(kMorning);
  auto condition = *server_.condition("XPUHealthy");
  EXPECT_EQ(condition["status"], "False");
  EXPECT_EQ(condition["lastTransitionTime"], kMorningText);
  EXPECT_EQ(condition["message"], "1 of 2 cards unhealthy: xpu1: driver fault: card lost");

  // Another cause, still False: written at once, the transition kept.
  now_ += 10s;
  writer_.set_condition(faulty("read failures"), kMorning + 10s);
  reconcile(kMorning + 10s);
  condition = *server_.condition("XPUHealthy");
  EXPECT_EQ(condition["message"], "1 of 2 cards unhealthy: xpu1: read failures");
  EXPECT_EQ(condition["lastTransitionTime"], kMorningText);
  EXPECT_EQ(condition["lastHeartbeatTime"], "2026-12-04T05:04:04Z");

  // Recovered: True, transition at the recovery.
  now_ += 10s;
  writer_.set_condition(healthy(), kMorning + 20s);
  reconcile(kMorning + 20s);
  condition = *server_.condition("XPUHealthy");
  EXPECT_EQ(condition["status"], "True");
  EXPECT_EQ(condition["lastTransitionTime"], "2026-12-04T05:04:14Z");
  EXPECT_EQ(count("GET"), 1U);  // the node is read once, before the first write
}

TEST_F(NodeStatusWriterTest, NoWriteWhileNothingChangesUntilTheHeartbeat) {
  writer_.set_condition(healthy(), kMorning);
  writer_.set_ready(true);
  auto next = reconcile(kMorning);
  EXPECT_EQ(next, now_ + 5min);
  const auto writes = writer_.writes();
  for (int i = 1; i < 30; ++i) {
    now_ += 10s;
    writer_.set_condition(healthy(), kMorning + i * 10s);
    writer_.set_ready(true);
    reconcile(kMorning + i * 10s);
  }
  EXPECT_EQ(writer_.writes(), writes);
  now_ += 10s;  // 300 s after the first write
  reconcile(kMorning + 300s);
  EXPECT_EQ(writer_.writes(), writes + 2);  // the condition's heartbeat, the label again
  EXPECT_EQ((*server_.condition("XPUHealthy"))["lastHeartbeatTime"], "2026-12-04T05:08:54Z");
  EXPECT_EQ((*server_.condition("XPUHealthy"))["lastTransitionTime"], kMorningText);
}

TEST_F(NodeStatusWriterTest, NothingKnownWritesNoCondition) {
  writer_.set_condition(std::nullopt, kMorning);
  reconcile(kMorning);
  EXPECT_FALSE(server_.condition("XPUHealthy"));
  EXPECT_EQ(count("GET"), 0U);
}

TEST_F(NodeStatusWriterTest, TheLabelFollowsServingAndTheReleaseKeepsAnotherManagersClaim) {
  writer_.set_condition(healthy(), kMorning);
  writer_.set_ready(true);
  reconcile(kMorning);
  EXPECT_EQ(server_.label("kunlunxin.com/xpu.ready"), "true");
  writer_.set_ready(false);
  reconcile(kMorning);
  EXPECT_FALSE(server_.label("kunlunxin.com/xpu.ready"));

  // A switch of allocation mode: the DRA driver applied the label too before the device plugin
  // stopped. The device plugin's release leaves it.
  writer_.set_ready(true);
  reconcile(kMorning);
  server_.label_as(std::string(kDraDriverFieldManager), "kunlunxin.com/xpu.ready", "true");
  EXPECT_TRUE(writer_.release_ready());
  EXPECT_EQ(server_.label("kunlunxin.com/xpu.ready"), "true");
  EXPECT_EQ(server_.label("kubernetes.io/hostname"), "node-a");
}

TEST_F(NodeStatusWriterTest, RetriesAFailureWithBackoffAndAForbiddenWriteAtTheSlowestPace) {
  writer_.set_condition(healthy(), kMorning);
  server_.fail_next(0);  // the GET
  EXPECT_EQ(reconcile(kMorning), now_ + 1s);
  EXPECT_EQ(reconcile(kMorning), now_ + 1s);  // not before its time
  now_ += 1s;
  server_.fail_next(503, "ServiceUnavailable");  // the GET again
  EXPECT_EQ(reconcile(kMorning), now_ + 2s);
  now_ += 2s;
  reconcile(kMorning);
  EXPECT_TRUE(server_.condition("XPUHealthy"));

  writer_.set_condition(faulty(), kMorning + 5s);
  server_.fail_next(403, "Forbidden");
  now_ += 1s;
  EXPECT_EQ(reconcile(kMorning + 6s), now_ + 60s);
  EXPECT_EQ((*server_.condition("XPUHealthy"))["status"], "True");
  now_ += 60s;
  reconcile(kMorning + 66s);
  EXPECT_EQ((*server_.condition("XPUHealthy"))["status"], "False");
  // The status changed when the role saw it, not when the write got through.
  EXPECT_EQ((*server_.condition("XPUHealthy"))["lastTransitionTime"], "2026-12-04T05:03:59Z");
}

TEST(NodeStatusReporter, WritesFromItsThreadAndReleasesTheLabelOnStop) {
  FakeNodeServer server;
  NodeStatusReporter reporter(std::make_unique<testing::ForwardingTransport>(server), "node-a",
                              kManager, 30s);
  CardState cards(30s, CardState::Clock::now());
  cards.update(present({card(0), card(3).unhealthy("driver fault: card in error state")}),
               CardState::Clock::now());
  reporter.update(cards.at(CardState::Clock::now()), /*serving=*/true);
  ASSERT_TRUE(xpu::test::wait_until([&] {
    auto condition = server.condition("XPUHealthy");
    return condition && (*condition)["status"] == "False" &&
           server.label("kunlunxin.com/xpu.ready") == "true";
  }));
  EXPECT_EQ((*server.condition("XPUHealthy"))["message"],
            "1 of 2 cards unhealthy: xpu3: driver fault: card in error state");

  cards.update(present({card(0), card(3)}), CardState::Clock::now());
  reporter.update(cards.at(CardState::Clock::now()), /*serving=*/true);
  ASSERT_TRUE(
      xpu::test::wait_until([&] { return (*server.condition("XPUHealthy"))["status"] == "True"; }));

  reporter.stop();  // the SIGTERM path
  EXPECT_FALSE(server.label("kunlunxin.com/xpu.ready"));
  EXPECT_EQ((*server.condition("XPUHealthy"))["status"], "True");  // the condition stays
}

}  // namespace
}  // namespace shim::node_status
