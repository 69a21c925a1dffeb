// Whether a DRA driver told to stop with claims prepared is replaced on its node or leaving it,
// from the DaemonSet and Node objects as the API server returns them.
#include <gtest/gtest.h>

#include "k8s-shim/dra/dra_driver_options.h"
#include "k8s-shim/dra/driver_departure.h"

namespace shim::dra {
namespace {

// As `kubectl get daemonset xpu-dra-driver -o json` shows the chart's, trimmed.
constexpr std::string_view kDaemonSet = R"({
  "apiVersion": "apps/v1", "kind": "DaemonSet",
  "metadata": {"name": "xpu-dra-driver", "namespace": "kube-system", "generation": 3},
  "spec": {"template": {"spec": {
    "nodeSelector": {"kunlunxin.com/allocation": "dra", "xpu": "on"},
    "containers": [{"name": "dra-driver"}]}}}})";

constexpr std::string_view kNode = R"({
  "apiVersion": "v1", "kind": "Node",
  "metadata": {"name": "node-1", "labels": {"kunlunxin.com/allocation": "dra", "xpu": "on",
                                            "kubernetes.io/os": "linux"}},
  "status": {"allocatable": {"cpu": "2"}}})";

kube::ApiResult<DaemonSetPlacement> daemon_set(std::string_view json) {
  auto parsed = parse_daemon_set_placement(json);
  if (!parsed) return kube::ApiError{.code = 0, .reason = "BadResponse", .message = parsed.error()};
  return parsed.value();
}

kube::ApiResult<NodeLabels> node(std::string_view json) {
  auto parsed = parse_node_labels(json);
  if (!parsed) return kube::ApiError{.code = 0, .reason = "BadResponse", .message = parsed.error()};
  return parsed.value();
}

std::string replaced(std::string text, std::string_view from, std::string_view to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

TEST(DriverDeparture, AnUnchangedDaemonSetThatStillSelectsTheNodeReplacesTheDriver) {
  const Departure departure = judge_departure(daemon_set(kDaemonSet), node(kNode));
  EXPECT_FALSE(departure.leaving) << departure.why;
  EXPECT_NE(departure.why.find("still selects node node-1"), std::string::npos) << departure.why;
}

TEST(DriverDeparture, AGoneOrDeletedDaemonSetMeansLeaving) {
  const Departure gone = judge_departure(
      kube::ApiError{.code = 404, .reason = "NotFound", .message = "GET ...: not found"},
      node(kNode));
  EXPECT_TRUE(gone.leaving);
  EXPECT_NE(gone.why.find("gone"), std::string::npos) << gone.why;

  const std::string deleting = replaced(std::string(kDaemonSet), R"("generation": 3)",
                                        R"("deletionTimestamp": "2026-12-06T11:00:00Z")");
  const Departure being_deleted = judge_departure(daemon_set(deleting), node(kNode));
  EXPECT_TRUE(being_deleted.leaving);
  EXPECT_NE(being_deleted.why.find("being deleted"), std::string::npos) << being_deleted.why;
}

TEST(DriverDeparture, ANodeTheSelectorNoLongerPicksMeansLeaving) {
  // allocation=both and the operator relabelled the node for the device plugin.
  const std::string relabelled =
      replaced(std::string(kNode), R"("kunlunxin.com/allocation": "dra")",
               R"("kunlunxin.com/allocation": "device-plugin")");
  const Departure moved = judge_departure(daemon_set(kDaemonSet), node(relabelled));
  EXPECT_TRUE(moved.leaving);
  EXPECT_NE(moved.why.find("kunlunxin.com/allocation=device-plugin"), std::string::npos)
      << moved.why;

  const std::string unlabelled = replaced(std::string(kNode), R"("xpu": "on",)", "");
  const Departure missing = judge_departure(daemon_set(kDaemonSet), node(unlabelled));
  EXPECT_TRUE(missing.leaving);
  EXPECT_NE(missing.why.find("no longer has the label xpu=on"), std::string::npos) << missing.why;
}

TEST(DriverDeparture, WhatCannotBeReadCountsAsLeaving) {
  // The chart's removal deletes the service account too: the token stops working.
  const kube::ApiError unauthorized{
      .code = 401, .reason = "Unauthorized", .message = "GET ...: 401"};
  EXPECT_TRUE(judge_departure(unauthorized, node(kNode)).leaving);
  EXPECT_TRUE(judge_departure(daemon_set(kDaemonSet), unauthorized).leaving);
  EXPECT_TRUE(judge_departure(daemon_set(R"({"kind": "DaemonSet", "spec": {"template": {"spec":
    {"nodeSelector": {"a": 1}}}}})"),
                              node(kNode))
                  .leaving);
}

TEST(DriverDeparture, HostileObjectsAreErrorsNamingTheField) {
  auto wrong_kind = parse_node_labels(R"({"kind": "Pod", "metadata": {"name": "x"}})");
  ASSERT_FALSE(wrong_kind);
  EXPECT_NE(wrong_kind.error().find("kind \"Pod\""), std::string::npos) << wrong_kind.error();

  auto bad_label = parse_node_labels(R"({"metadata": {"labels": {"a": ["b"]}}})");
  ASSERT_FALSE(bad_label);
  EXPECT_NE(bad_label.error().find("metadata.labels.a"), std::string::npos) << bad_label.error();

  auto bad_selector =
      parse_daemon_set_placement(R"({"spec": {"template": {"spec": {"nodeSelector": "x"}}}})");
  ASSERT_FALSE(bad_selector);
  EXPECT_NE(bad_selector.error().find("spec.template.spec.nodeSelector"), std::string::npos)
      << bad_selector.error();

  EXPECT_FALSE(parse_daemon_set_placement("{\"spec\": "));
  EXPECT_FALSE(parse_node_labels("[]"));
}

TEST(DriverDeparture, AnAffinityIsNotEvaluated) {
  auto placement = parse_daemon_set_placement(
      R"({"spec": {"template": {"spec": {"affinity": {"nodeAffinity": {}}}}}})");
  ASSERT_TRUE(placement);
  EXPECT_TRUE(placement->has_node_affinity);
  EXPECT_TRUE(placement->node_selector.empty());
  EXPECT_FALSE(judge_departure(placement.value(), node(kNode)).leaving);
}

TEST(DriverDeparture, ClaimsAllocatedFromThisNodesPoolAreWaitedFor) {
  // As `kubectl get resourceclaims -A -o json` lists them, trimmed: one of ours on this node, one
  // of ours on another node, one of another driver here, one not allocated.
  auto claims = parse_resource_claim_list(R"({"kind": "ResourceClaimList", "items": [
    {"metadata": {"name": "a", "namespace": "default"}, "status": {"allocation": {"devices": {
      "results": [{"request": "r", "driver": "xpu.kunlunxin.com", "pool": "node-1",
                   "device": "xpu-3"}]}}}},
    {"metadata": {"name": "b", "namespace": "default"}, "status": {"allocation": {"devices": {
      "results": [{"request": "r", "driver": "xpu.kunlunxin.com", "pool": "node-2",
                   "device": "xpu-3"}]}}}},
    {"metadata": {"name": "c", "namespace": "ml"}, "status": {"allocation": {"devices": {
      "results": [{"request": "r", "driver": "nic.example.com", "pool": "node-1",
                   "device": "nic-0"},
                  {"request": "x", "driver": "xpu.kunlunxin.com", "pool": "node-1",
                   "device": "xpu-4"}]}}}},
    {"metadata": {"name": "d", "namespace": "default"}, "spec": {}}]})");
  ASSERT_TRUE(claims) << claims.error();
  EXPECT_EQ(claims_allocated_here(claims.value(), "xpu.kunlunxin.com", "node-1"),
            (std::vector<std::string>{"default/a", "ml/c"}));
  EXPECT_TRUE(claims_allocated_here(claims.value(), "xpu.kunlunxin.com", "node-3").empty());

  auto bad = parse_resource_claim_list(R"({"items": [{}, {"status": {"allocation": 5}}]})");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("items[1]"), std::string::npos) << bad.error();
  EXPECT_FALSE(parse_resource_claim_list(R"({"items": {}})"));
}

TEST(DraDriverOptions, TheDaemonSetIsNamespaceSlashName) {
  ShimOptions shim;
  std::vector<std::string> args = {"--node-name", "node-1", "--daemon-set",
                                   "kube-system/xpu-dra-driver"};
  const DraDriverOptions parsed = parse_dra_driver_command_line(shim, args);
  EXPECT_EQ(parsed.daemon_set_namespace, "kube-system");
  EXPECT_EQ(parsed.daemon_set_name, "xpu-dra-driver");
  EXPECT_TRUE(parse_dra_driver_command_line(shim, std::vector<std::string>{"--node-name", "n"})
                  .daemon_set_name.empty());
}

TEST(DraDriverOptionsDeathTest, ADaemonSetThatIsNoNamespaceSlashNameExitsWithUsage) {
  for (const char* bad : {"xpu-dra-driver", "Kube/x", "kube-system/", "a/b/c"}) {
    ShimOptions shim;
    std::vector<std::string> args = {"--node-name", "node-1", "--daemon-set", bad};
    EXPECT_EXIT(parse_dra_driver_command_line(shim, args), testing::ExitedWithCode(2),
                "--daemon-set")
        << bad;
  }
}

}  // namespace
}  // namespace shim::dra
