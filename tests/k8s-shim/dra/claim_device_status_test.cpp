// The claims' status.devices: what the apply body says for each card, and when the writer sends
// it (once per change; again after a failure, with back-off; never to a claim that is gone).
#include "k8s-shim/dra/claim_device_status.h"

#include <gtest/gtest.h>

#include <regex>

#include <nlohmann/json.hpp>

#include "k8s-shim/cards/card_state.h"
#include "k8s-shim/kube/api_time.h"
#include "tests/k8s-shim/dra/kube/replay_transport.h"
#include "tests/support/card_builder.h"

namespace shim::dra {
namespace {

using namespace std::chrono_literals;
using Clock = DeviceStatusWriter::Clock;
using testing::ReplayTransport;
using xpu::test::card;

const auto kMorning = std::chrono::system_clock::time_point(std::chrono::seconds(1796360634));
const std::string kMorningText = "2026-12-04T05:03:54Z";

PreparedClaim claim_of(std::vector<unsigned> indices, std::string uid = "uid-1") {
  PreparedClaim claim{
      .uid = std::move(uid), .namespace_name = "ml", .name = "train", .devices = {}};
  for (unsigned index : indices)
    claim.devices.push_back(PreparedDevice{.requests = {"xpus"},
                                           .pool = "node-a",
                                           .device = "xpu-" + std::to_string(index),
                                           .index = index,
                                           .uuid = "uuid-" + std::to_string(index),
                                           .cdi_ids = {}});
  return claim;
}

// What a CardState hands out once xpud has answered: these cards.
void set_cards(DeviceStatusWriter& writer, const std::vector<PreparedClaim>& claims,
               std::vector<xpu::DeviceInfo> cards, std::chrono::system_clock::time_point wall_now) {
  writer.set(claims,
             xpu::DeviceView{.xpud_present = true, .manager = {}, .devices = std::move(cards)},
             /*xpud_lost=*/false, wall_now);
}

nlohmann::json devices_sent(const kube::HttpRequest& request) {
  return nlohmann::json::parse(request.body).at("status").at("devices");
}

TEST(ConditionReason, HealthyOrTheKindInCamelCase) {
  EXPECT_EQ(condition_reason(true, ""), "Healthy");
  EXPECT_EQ(condition_reason(true, "driver_fault"), "Healthy");
  EXPECT_EQ(condition_reason(false, "driver_fault"), "DriverFault");
  EXPECT_EQ(condition_reason(false, "xpud_unreachable"), "XpudUnreachable");
  EXPECT_EQ(condition_reason(false, "unhealthy"), "Unhealthy");
}

TEST(ConditionReason, AKindThatCannotBeAReasonIsUnhealthy) {
  // metav1.Condition's reason: ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$ (apimachinery,
  // ValidateConditions); a kind from a newer xpud or garbage must not make the write fail.
  const std::regex valid("^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$");
  for (std::string kind : {"", "9lives", "_x", "x_", "Bad Kind", "thermal/trip", "ü"}) {
    EXPECT_EQ(condition_reason(false, kind), "Unhealthy") << kind;
  }
  for (std::string kind : {"driver_fault", "read_failures", "driver_stalled", "a1_b2"})
    EXPECT_TRUE(std::regex_match(condition_reason(false, kind), valid)) << kind;
}

TEST(Rfc3339, SecondsInUtc) {
  EXPECT_EQ(kube::rfc3339(kMorning + 999ms), kMorningText);
}

TEST(DeviceStatusApplyBody, NamesTheClaimWithItsUidAndOnlyOurEntries) {
  DeviceStatusEntry entry{.pool = "node-a",
                          .device = "xpu-3",
                          .healthy = false,
                          .reason = "DriverFault",
                          .message = "card fell off the bus",
                          .last_transition_time = kMorningText,
                          .uuid = "uuid-3",
                          .index = 3};
  auto body = nlohmann::json::parse(device_status_apply_body(claim_of({3}), {entry}));
  EXPECT_EQ(body["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ(body["kind"], "ResourceClaim");
  EXPECT_EQ(body["metadata"],
            (nlohmann::json{{"name", "train"}, {"namespace", "ml"}, {"uid", "uid-1"}}));
  EXPECT_FALSE(body.contains("spec"));
  const auto& device = body["status"]["devices"].at(0);
  EXPECT_EQ(device["driver"], "xpu.kunlunxin.com");
  EXPECT_EQ(device["pool"], "node-a");
  EXPECT_EQ(device["device"], "xpu-3");
  EXPECT_EQ(device["data"], (nlohmann::json{{"uuid", "uuid-3"}, {"index", 3}}));
  ASSERT_EQ(device["conditions"].size(), 1u);
  EXPECT_EQ(device["conditions"][0], (nlohmann::json{{"type", "Healthy"},
                                                     {"status", "False"},
                                                     {"reason", "DriverFault"},
                                                     {"message", "card fell off the bus"},
                                                     {"lastTransitionTime", kMorningText}}));
}

TEST(DeviceStatusApplyBody, AShareIsNamedWithItsShareIdAsTheApiRequires) {
  DeviceStatusEntry share{.pool = "node-a",
                          .device = "xpu-3-shared",
                          .share_id = "0b5c2a4e-7d1f-4c55-9a1e-2f3b4c5d6e7f",
                          .healthy = true,
                          .reason = "Healthy",
                          .message = "",
                          .last_transition_time = kMorningText,
                          .uuid = "uuid-3",
                          .index = 3};
  DeviceStatusEntry whole = share;
  whole.device = "xpu-3";
  whole.share_id.clear();
  auto body = nlohmann::json::parse(device_status_apply_body(claim_of({3}), {share, whole}));
  EXPECT_EQ(body["status"]["devices"].at(0)["shareID"], "0b5c2a4e-7d1f-4c55-9a1e-2f3b4c5d6e7f");
  EXPECT_FALSE(body["status"]["devices"].at(1).contains("shareID"));
}

TEST(DeviceStatusApplyBody, InvalidUtf8FromXpudIsReplacedNotThrownOn) {
  DeviceStatusEntry entry;
  entry.pool = "p";
  entry.device = "xpu-0";
  entry.message = "bad \xff byte";
  auto body = nlohmann::json::parse(device_status_apply_body(claim_of({0}), {entry}));
  EXPECT_EQ(body["status"]["devices"][0]["conditions"][0]["message"], "bad \xef\xbf\xbd byte");
}

class DeviceStatusWriterTest : public ::testing::Test {
 protected:
  ReplayTransport transport_;
  KubeApi api_{transport_};
  DeviceStatusWriter writer_{api_};
  Clock::time_point now_ = Clock::now();
};

TEST_F(DeviceStatusWriterTest, APreparedClaimsCardsAreWrittenOnceByServerSideApply) {
  set_cards(writer_, {claim_of({0, 1})}, {card(0), card(1), card(2)}, kMorning);
  transport_.answer(200, "{}");
  EXPECT_EQ(writer_.reconcile(now_), Clock::time_point::max());
  ASSERT_EQ(transport_.requests.size(), 1u);
  const kube::HttpRequest& sent = transport_.requests[0];
  EXPECT_EQ(sent.method, "PATCH");
  EXPECT_EQ(sent.target,
            "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/train/status"
            "?fieldManager=xpu.kunlunxin.com&force=true");
  EXPECT_EQ(sent.content_type, "application/apply-patch+yaml");
  auto devices = devices_sent(sent);
  ASSERT_EQ(devices.size(), 2u);
  for (const auto& device : devices) {
    EXPECT_EQ(device["conditions"][0]["status"], "True");
    EXPECT_EQ(device["conditions"][0]["reason"], "Healthy");
    EXPECT_EQ(device["conditions"][0]["lastTransitionTime"], kMorningText);
  }
  EXPECT_EQ(writer_.writes(), 1u);

  // Nothing changed: nothing sent, whatever the clock says.
  set_cards(writer_, {claim_of({0, 1})}, {card(0), card(1), card(2)}, kMorning + 1h);
  EXPECT_EQ(writer_.reconcile(now_ + 1h), Clock::time_point::max());
  EXPECT_EQ(transport_.requests.size(), 1u);
}

TEST_F(DeviceStatusWriterTest, AHealthChangeIsWrittenWithItsOwnTransitionTime) {
  set_cards(writer_, {claim_of({0, 1})}, {card(0), card(1)}, kMorning);
  transport_.answer(200, "{}");
  (void)writer_.reconcile(now_);

  // Card 1 fails an hour later; card 0 keeps the time it became healthy.
  set_cards(
      writer_, {claim_of({0, 1})},
      {card(0), card(1).unhealthy("card fell off the bus").health_reason_kind("driver_fault")},
      kMorning + 1h);
  transport_.answer(200, "{}");
  (void)writer_.reconcile(now_ + 1h);
  ASSERT_EQ(transport_.requests.size(), 2u);
  auto devices = devices_sent(transport_.requests[1]);
  EXPECT_EQ(devices[0]["conditions"][0]["lastTransitionTime"], kMorningText);
  EXPECT_EQ(devices[1]["conditions"][0],
            (nlohmann::json{{"type", "Healthy"},
                            {"status", "False"},
                            {"reason", "DriverFault"},
                            {"message", "card fell off the bus"},
                            {"lastTransitionTime", "2026-12-04T06:03:54Z"}}));

  // Recovery: True again, stamped with its own time.
  set_cards(writer_, {claim_of({0, 1})}, {card(0), card(1)}, kMorning + 2h);
  transport_.answer(200, "{}");
  (void)writer_.reconcile(now_ + 2h);
  ASSERT_EQ(transport_.requests.size(), 3u);
  EXPECT_EQ(devices_sent(transport_.requests[2])[1]["conditions"][0]["status"], "True");
  EXPECT_EQ(devices_sent(transport_.requests[2])[1]["conditions"][0]["lastTransitionTime"],
            "2026-12-04T07:03:54Z");
}

TEST_F(DeviceStatusWriterTest, ACardXpudNoLongerReportsIsGone) {
  // Card 1's index now holds another card (another UUID): not the one prepared.
  set_cards(writer_, {claim_of({0, 1})}, {card(0), card(1).uuid("someone-else")}, kMorning);
  transport_.answer(200, "{}");
  (void)writer_.reconcile(now_);
  auto devices = devices_sent(transport_.requests.at(0));
  EXPECT_EQ(devices[1]["conditions"][0]["status"], "False");
  EXPECT_EQ(devices[1]["conditions"][0]["reason"], "CardGone");
}

TEST_F(DeviceStatusWriterTest, AFailedWriteIsRetriedWithBackOff) {
  set_cards(writer_, {claim_of({0})}, {card(0)}, kMorning);
  transport_.answer(503, R"({"kind":"Status","reason":"ServiceUnavailable","code":503})");
  EXPECT_EQ(writer_.reconcile(now_), now_ + 1s);
  EXPECT_EQ(writer_.reconcile(now_ + 500ms), now_ + 1s) << "not before its time";
  EXPECT_EQ(transport_.requests.size(), 1u);
  transport_.fail("connection refused");
  EXPECT_EQ(writer_.reconcile(now_ + 1s), now_ + 3s) << "doubled";
  transport_.answer(200, "{}");
  EXPECT_EQ(writer_.reconcile(now_ + 3s), Clock::time_point::max());
  EXPECT_EQ(transport_.requests.size(), 3u);
  EXPECT_EQ(writer_.writes(), 1u);
}

TEST_F(DeviceStatusWriterTest, AClaimThatIsGoneOrRefusedIsNotWrittenAgainUntilItsStatusChanges) {
  // 404: deleted (the status subresource never creates). 409: a conflict the apply was forced
  // over anyway. 422: a claim made again under the name (metadata.uid is immutable) or an entry
  // the server refuses.
  for (long code : {404L, 409L, 422L}) {
    SCOPED_TRACE(code);
    ReplayTransport transport;
    KubeApi api(transport);
    DeviceStatusWriter writer(api);
    set_cards(writer, {claim_of({0})}, {card(0)}, kMorning);
    transport.answer(code, R"({"kind":"Status","code":)" + std::to_string(code) + "}");
    EXPECT_EQ(writer.reconcile(now_), Clock::time_point::max());
    EXPECT_EQ(writer.reconcile(now_ + 1h), Clock::time_point::max());
    EXPECT_EQ(transport.requests.size(), 1u);
    // A new health is a new body: tried once more.
    set_cards(writer, {claim_of({0})}, {card(0).unhealthy("x")}, kMorning + 1h);
    transport.answer(200, "{}");
    (void)writer.reconcile(now_ + 1h);
    EXPECT_EQ(transport.requests.size(), 2u);
  }
}

TEST_F(DeviceStatusWriterTest, ForbiddenIsRetriedAtTheSamePaceAsOtherFailures) {
  // RBAC can be fixed while the driver runs (helm upgrade): keep trying.
  set_cards(writer_, {claim_of({0})}, {card(0)}, kMorning);
  transport_.answer(403, R"({"kind":"Status","reason":"Forbidden","code":403})");
  EXPECT_EQ(writer_.reconcile(now_), now_ + 1s);
  transport_.answer(200, "{}");
  EXPECT_EQ(writer_.reconcile(now_ + 1s), Clock::time_point::max());
  EXPECT_EQ(writer_.writes(), 1u);
}

TEST_F(DeviceStatusWriterTest, AnUnpreparedClaimIsForgotten) {
  set_cards(writer_, {claim_of({0}, "uid-1"), claim_of({1}, "uid-2")}, {card(0), card(1)},
            kMorning);
  transport_.answer(503, "{}");
  (void)writer_.reconcile(now_);
  ASSERT_EQ(transport_.requests.size(), 1u);
  // uid-1 unprepared before its retry: only uid-2 is tried.
  set_cards(writer_, {claim_of({1}, "uid-2")}, {card(0), card(1)}, kMorning);
  transport_.answer(200, "{}");
  EXPECT_EQ(writer_.reconcile(now_ + 1s), Clock::time_point::max());
  ASSERT_EQ(transport_.requests.size(), 2u);
  EXPECT_EQ(devices_sent(transport_.requests[1])[0]["device"], "xpu-1");
  EXPECT_FALSE(writer_.written("uid-1"));
}

TEST_F(DeviceStatusWriterTest, NothingIsWrittenBeforeXpudAnswered) {
  // A driver restarted with claims in its checkpoint: xpud has not answered yet, so nothing is
  // known of their cards (not "gone").
  writer_.set({claim_of({0})}, xpu::DeviceView{}, /*xpud_lost=*/false, kMorning);
  EXPECT_EQ(writer_.reconcile(now_), Clock::time_point::max());
  EXPECT_TRUE(transport_.requests.empty());
  set_cards(writer_, {claim_of({0})}, {card(0)}, kMorning + 1s);
  transport_.answer(200, "{}");
  (void)writer_.reconcile(now_ + 1s);
  ASSERT_EQ(transport_.requests.size(), 1u);
  EXPECT_EQ(devices_sent(transport_.requests[0])[0]["conditions"][0]["status"], "True");
}

TEST_F(DeviceStatusWriterTest, XpudNeverSeenPastTheGracePeriodIsUnreachableNotGone) {
  writer_.set({claim_of({0})}, xpu::DeviceView{}, /*xpud_lost=*/true, kMorning);
  transport_.answer(200, "{}");
  (void)writer_.reconcile(now_);
  ASSERT_EQ(transport_.requests.size(), 1u);
  const auto condition = devices_sent(transport_.requests[0])[0]["conditions"][0];
  EXPECT_EQ(condition["status"], "False");
  EXPECT_EQ(condition["reason"], "XpudUnreachable");
  EXPECT_EQ(condition["message"], std::string(kXpudUnreachableReason));
}

TEST_F(DeviceStatusWriterTest, ForbiddenFromTheStatusValidationIsRetriedToo) {
  // 1.36+: the right on resourceclaims/driver is checked inside the status validation, so its
  // absence is a 422 (k8s.io/kubernetes v1.37.2, pkg/registry/resource/utils.go).
  set_cards(writer_, {claim_of({0})}, {card(0)}, kMorning);
  transport_.answer(
      422,
      R"({"kind":"Status","reason":"Invalid","code":422,"message":"ResourceClaim.resource.k8s.io \"train\" is invalid: status.devices: Forbidden: changing status.devices requires resource=\"resourceclaims/driver\", verb=\"associated-node:patch\" permission: forbidden"})");
  EXPECT_EQ(writer_.reconcile(now_), now_ + 1s);
  transport_.answer(200, "{}");
  EXPECT_EQ(writer_.reconcile(now_ + 1s), Clock::time_point::max());
  EXPECT_EQ(writer_.writes(), 1u);
}

TEST_F(DeviceStatusWriterTest, APassStopsAtTheFirstServerFailure) {
  // Every write may take the transport's whole timeout: one failure says the server is down for
  // all of them, so the loop is not held for each claim in turn.
  set_cards(writer_, {claim_of({0}, "uid-1"), claim_of({1}, "uid-2"), claim_of({2}, "uid-3")},
            {card(0), card(1), card(2)}, kMorning);
  transport_.fail("operation timed out");
  EXPECT_EQ(writer_.reconcile(now_), now_ + 1s);
  EXPECT_EQ(transport_.requests.size(), 1u);
  for (int i = 0; i < 3; ++i) transport_.answer(200, "{}");
  EXPECT_EQ(writer_.reconcile(now_ + 1s), Clock::time_point::max());
  EXPECT_EQ(transport_.requests.size(), 4u);
  EXPECT_EQ(writer_.writes(), 3u);
}

TEST_F(DeviceStatusWriterTest, TextPastTheConditionLimitsIsCut) {
  // metav1.Condition: reason at most 1024 bytes, message at most 32768.
  std::string message(40000, 'x');
  message.replace(32767, 2, "\xC3\xA9");  // a two-byte character across the limit
  set_cards(writer_, {claim_of({0})},
            {card(0).unhealthy(message).health_reason_kind(std::string(2000, 'a'))}, kMorning);
  transport_.answer(200, "{}");
  (void)writer_.reconcile(now_);
  const auto condition = devices_sent(transport_.requests.at(0))[0]["conditions"][0];
  EXPECT_EQ(condition["reason"], "Unhealthy");
  EXPECT_EQ(condition["message"].get<std::string>(), std::string(32767, 'x'));
}

}  // namespace
}  // namespace shim::dra
