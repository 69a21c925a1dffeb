// The claims' status.devices: what the apply body says for each card, and when the writer sends
// it (once per change; again after a failure, with back-off; never to a claim that is gone).
#include "k8s-shim/dra/claim_device_status.h"

#include <gtest/gtest.h>

#include <regex>

#include <nlohmann/json.hpp>

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

nlohmann::json devices_sent(const HttpRequest& request) {
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
  EXPECT_EQ(rfc3339(kMorning + 999ms), kMorningText);
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
  writer_.set({claim_of({0, 1})}, {card(0), card(1), card(2)}, kMorning);
  transport_.answer(200, "{}");
  EXPECT_EQ(writer_.reconcile(now_), Clock::time_point::max());
  ASSERT_EQ(transport_.requests.size(), 1u);
  const HttpRequest& sent = transport_.requests[0];
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
  writer_.set({claim_of({0, 1})}, {card(0), card(1), card(2)}, kMorning + 1h);
  EXPECT_EQ(writer_.reconcile(now_ + 1h), Clock::time_point::max());
  EXPECT_EQ(transport_.requests.size(), 1u);
}

TEST_F(DeviceStatusWriterTest, AHealthChangeIsWrittenWithItsOwnTransitionTime) {
  writer_.set({claim_of({0, 1})}, {card(0), card(1)}, kMorning);
  transport_.answer(200, "{}");
  (void)writer_.reconcile(now_);

  // Card 1 fails an hour later; card 0 keeps the time it became healthy.
  writer_.set(
      {claim_of({0, 1})},
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
  writer_.set({claim_of({0, 1})}, {card(0), card(1)}, kMorning + 2h);
  transport_.answer(200, "{}");
  (void)writer_.reconcile(now_ + 2h);
  ASSERT_EQ(transport_.requests.size(), 3u);
  EXPECT_EQ(devices_sent(transport_.requests[2])[1]["conditions"][0]["status"], "True");
  EXPECT_EQ(devices_sent(transport_.requests[2])[1]["conditions"][0]["lastTransitionTime"],
            "2026-12-04T07:03:54Z");
}

TEST_F(DeviceStatusWriterTest, ACardXpudNoLongerReportsIsGone) {
  // Card 1's index now holds another card (another UUID): not the one prepared.
  writer_.set({claim_of({0, 1})}, {card(0), card(1).uuid("someone-else")}, kMorning);
  transport_.answer(200, "{}");
  (void)writer_.reconcile(now_);
  auto devices = devices_sent(transport_.requests.at(0));
  EXPECT_EQ(devices[1]["conditions"][0]["status"], "False");
  EXPECT_EQ(devices[1]["conditions"][0]["reason"], "CardGone");
}

TEST_F(DeviceStatusWriterTest, AFailedWriteIsRetriedWithBackOff) {
  writer_.set({claim_of({0})}, {card(0)}, kMorning);
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
  // 404: deleted. 409: "uid mismatch" for a claim gone (apiserver patch.go, applyPatch). 422: a
  // claim made again under the name (metadata.uid is immutable) or an entry the server refuses.
  for (long code : {404L, 409L, 422L}) {
    SCOPED_TRACE(code);
    ReplayTransport transport;
    KubeApi api(transport);
    DeviceStatusWriter writer(api);
    writer.set({claim_of({0})}, {card(0)}, kMorning);
    transport.answer(code, R"({"kind":"Status","code":)" + std::to_string(code) + "}");
    EXPECT_EQ(writer.reconcile(now_), Clock::time_point::max());
    EXPECT_EQ(writer.reconcile(now_ + 1h), Clock::time_point::max());
    EXPECT_EQ(transport.requests.size(), 1u);
    // A new health is a new body: tried once more.
    writer.set({claim_of({0})}, {card(0).unhealthy("x")}, kMorning + 1h);
    transport.answer(200, "{}");
    (void)writer.reconcile(now_ + 1h);
    EXPECT_EQ(transport.requests.size(), 2u);
  }
}

TEST_F(DeviceStatusWriterTest, ForbiddenIsRetriedAtTheSamePaceAsOtherFailures) {
  // RBAC can be fixed while the driver runs (helm upgrade): keep trying.
  writer_.set({claim_of({0})}, {card(0)}, kMorning);
  transport_.answer(403, R"({"kind":"Status","reason":"Forbidden","code":403})");
  EXPECT_EQ(writer_.reconcile(now_), now_ + 1s);
  transport_.answer(200, "{}");
  EXPECT_EQ(writer_.reconcile(now_ + 1s), Clock::time_point::max());
  EXPECT_EQ(writer_.writes(), 1u);
}

TEST_F(DeviceStatusWriterTest, AnUnpreparedClaimIsForgotten) {
  writer_.set({claim_of({0}, "uid-1"), claim_of({1}, "uid-2")}, {card(0), card(1)}, kMorning);
  transport_.answer(503, "{}");
  transport_.answer(503, "{}");
  (void)writer_.reconcile(now_);
  ASSERT_EQ(transport_.requests.size(), 2u);
  // uid-1 unprepared before its retry: only uid-2 is tried again.
  writer_.set({claim_of({1}, "uid-2")}, {card(0), card(1)}, kMorning);
  transport_.answer(200, "{}");
  EXPECT_EQ(writer_.reconcile(now_ + 1s), Clock::time_point::max());
  ASSERT_EQ(transport_.requests.size(), 3u);
  EXPECT_EQ(devices_sent(transport_.requests[2])[0]["device"], "xpu-1");
  EXPECT_FALSE(writer_.written("uid-1"));
}

}  // namespace
}  // namespace shim::dra
