// The hand-over taint's reading of a Node and the patch that adds or removes it, against Node
// objects as the API server returns them (k8s.io/api v0.37.2 core/v1: spec.taints is an atomic
// list, status.allocatable a map of quantities).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "k8s-shim/node_status/handover_taint.h"

namespace shim::node_status {
namespace {

using nlohmann::json;

constexpr std::string_view kNode = R"({
  "apiVersion": "v1", "kind": "Node",
  "metadata": {"name": "node-1", "resourceVersion": "4711"},
  "spec": {"taints": [{"key": "kunlunxin.com/xpu", "effect": "NoSchedule"},
                      {"key": "dedicated", "value": "ai", "effect": "NoExecute",
                       "timeAdded": "2026-12-06T10:00:00Z"}]},
  "status": {"allocatable": {"cpu": "2", "kunlunxin.com/xpu": "8", "kunlunxin.com/vxpu": "0"}}})";

HandoverView view_of(std::string_view node) {
  auto view = parse_handover_view(node);
  EXPECT_TRUE(view) << view.error();
  return view ? view.value() : HandoverView{};
}

TEST(HandoverTaint, RaisingAddsOnlyItsTaintAndKeepsTheOthersAsTheyWere) {
  const HandoverView view = view_of(kNode);
  EXPECT_FALSE(view.tainted);
  auto patch = handover_patch(view, true);
  ASSERT_TRUE(patch);
  const json ops = json::parse(*patch);
  // The patch carries the version it was read at: a concurrent change makes it a 409.
  EXPECT_EQ(ops[0],
            json({{"op", "replace"}, {"path", "/metadata/resourceVersion"}, {"value", "4711"}}));
  EXPECT_EQ(ops[1]["op"], "add");
  EXPECT_EQ(ops[1]["path"], "/spec/taints");
  EXPECT_EQ(ops[1]["value"], json::parse(R"([
    {"key": "kunlunxin.com/xpu", "effect": "NoSchedule"},
    {"key": "dedicated", "value": "ai", "effect": "NoExecute", "timeAdded": "2026-12-06T10:00:00Z"},
    {"key": "kunlunxin.com/xpu-handover", "effect": "NoSchedule"}])"));
  EXPECT_FALSE(handover_patch(view, false)) << "nothing to remove";
}

TEST(HandoverTaint, LoweringRemovesOnlyItsTaint) {
  std::string tainted(kNode);
  tainted.replace(tainted.find(R"("taints": [)"), 11,
                  R"("taints": [{"key": "kunlunxin.com/xpu-handover", "effect": "NoSchedule"}, )");
  const HandoverView view = view_of(tainted);
  EXPECT_TRUE(view.tainted);
  EXPECT_FALSE(handover_patch(view, true)) << "already there";
  auto patch = handover_patch(view, false);
  ASSERT_TRUE(patch);
  EXPECT_EQ(json::parse(*patch)[1]["value"], json::parse(R"([
    {"key": "kunlunxin.com/xpu", "effect": "NoSchedule"},
    {"key": "dedicated", "value": "ai", "effect": "NoExecute", "timeAdded": "2026-12-06T10:00:00Z"}])"));
}

TEST(HandoverTaint, ANodeWithoutTaintsGetsAListOfOne) {
  const HandoverView view = view_of(R"({"kind": "Node", "metadata": {"resourceVersion": "1"}})");
  EXPECT_EQ(json::parse(*handover_patch(view, true))[1]["value"],
            json::parse(R"([{"key": "kunlunxin.com/xpu-handover", "effect": "NoSchedule"}])"));
}

TEST(HandoverTaint, ResourcesAreWithdrawnWhenAllocatableCountsNoneOfThem) {
  const HandoverView view = view_of(kNode);
  EXPECT_FALSE(resources_withdrawn(view, {"kunlunxin.com/xpu"}));
  EXPECT_TRUE(resources_withdrawn(view, {"kunlunxin.com/vxpu"}));  // "0"
  EXPECT_TRUE(resources_withdrawn(view, {"kunlunxin.com/R200"}));  // absent
  EXPECT_FALSE(resources_withdrawn(view, {"kunlunxin.com/vxpu", "kunlunxin.com/xpu"}));
  EXPECT_TRUE(resources_withdrawn(view, {}));
}

TEST(HandoverTaint, HostileNodesAreErrorsNamingTheField) {
  auto no_version = parse_handover_view(R"({"kind": "Node", "metadata": {}})");
  ASSERT_FALSE(no_version);
  EXPECT_NE(no_version.error().find("resourceVersion"), std::string::npos) << no_version.error();
  auto bad_taints =
      parse_handover_view(R"({"metadata": {"resourceVersion": "1"}, "spec": {"taints": {}}})");
  ASSERT_FALSE(bad_taints);
  EXPECT_NE(bad_taints.error().find("spec.taints"), std::string::npos) << bad_taints.error();
  auto bad_taint = parse_handover_view(
      R"({"metadata": {"resourceVersion": "1"}, "spec": {"taints": [{"key": 5}]}})");
  ASSERT_FALSE(bad_taint);
  EXPECT_NE(bad_taint.error().find("spec.taints[0].key"), std::string::npos) << bad_taint.error();
  auto bad_quantity = parse_handover_view(
      R"({"metadata": {"resourceVersion": "1"}, "status": {"allocatable": {"a": 1}}})");
  ASSERT_FALSE(bad_quantity);
  EXPECT_NE(bad_quantity.error().find("status.allocatable.a"), std::string::npos)
      << bad_quantity.error();
  EXPECT_FALSE(parse_handover_view(R"({"kind": "Pod", "metadata": {"resourceVersion": "1"}})"));
  EXPECT_FALSE(parse_handover_view("{"));
}

}  // namespace
}  // namespace shim::node_status
