// Whether a stopping device plugin has a successor on its node: the flag's NAMESPACE/NAME, the
// reading of a DaemonSet as the API server returns it (k8s.io/api v0.37.2 apps/v1; a foreground
// deletion leaves metadata.deletionTimestamp on the object until its pods are gone) and the
// answers the plugin acts on (404 when helm uninstall deleted it, 403 when the rights went first).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "k8s-shim/node_status/handover_successor.h"

namespace shim::node_status {
namespace {

constexpr std::string_view kDaemonSet = R"({"apiVersion": "apps/v1", "kind": "DaemonSet",
  "metadata": {"name": "xpu-dra-driver", "namespace": "kube-system", "uid": "1"},
  "spec": {}, "status": {"numberReady": 1}})";
constexpr std::string_view kDeleting = R"({"apiVersion": "apps/v1", "kind": "DaemonSet",
  "metadata": {"name": "xpu-device-plugin-daemonset", "namespace": "kube-system",
               "deletionTimestamp": "2026-12-07T15:00:00Z", "finalizers": ["foregroundDeletion"]}})";

std::string status_body(long code, const std::string& reason) {
  return R"({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": ")" + reason +
         R"(", "message": "said so", "code": )" + std::to_string(code) + "}";
}

// Answers by path; a path it does not know is a 404, as the API server's for a DaemonSet that
// is not there.
class DaemonSetServer : public kube::HttpTransport {
 public:
  std::map<std::string, kube::HttpResponse> answers;
  std::vector<std::string> asked;

  xpu::Result<kube::HttpResponse> send(const kube::HttpRequest& request) override {
    asked.push_back(request.method + " " + request.target);
    if (auto found = answers.find(request.target); found != answers.end()) return found->second;
    return kube::HttpResponse{404, status_body(404, "NotFound")};
  }
};

constexpr std::string_view kPluginPath =
    "/apis/apps/v1/namespaces/kube-system/daemonsets/xpu-device-plugin-daemonset";
constexpr std::string_view kDriverPath =
    "/apis/apps/v1/namespaces/kube-system/daemonsets/xpu-dra-driver";

const std::vector<DaemonSetRef> kCandidates = {{"kube-system", "xpu-device-plugin-daemonset"},
                                               {"kube-system", "xpu-dra-driver"}};

TEST(HandoverSuccessor, TheFlagIsANamespaceAndAName) {
  auto ref = parse_daemonset_ref("kube-system/xpu-dra-driver");
  ASSERT_TRUE(ref) << ref.error();
  EXPECT_EQ(*ref, (DaemonSetRef{"kube-system", "xpu-dra-driver"}));
  for (const auto* bad : {"xpu-dra-driver", "/xpu-dra-driver", "kube-system/", "Kube/x",
                          "kube.system/x", "kube-system/x/y", "kube-system/X"}) {
    EXPECT_FALSE(parse_daemonset_ref(bad)) << bad;
  }
  EXPECT_NE(parse_daemonset_ref("kube-system").error().find("NAMESPACE/NAME"), std::string::npos);
  EXPECT_NE(parse_daemonset_ref("a/B").error().find("name 'B'"), std::string::npos);
}

TEST(HandoverSuccessor, ADaemonSetStaysUnlessItIsBeingDeleted) {
  EXPECT_EQ(daemonset_stays(kDaemonSet).value(), true);
  EXPECT_EQ(daemonset_stays(kDeleting).value(), false);
  EXPECT_EQ(
      daemonset_stays(R"({"kind": "DaemonSet", "metadata": {"deletionTimestamp": null}})").value(),
      true);
}

TEST(HandoverSuccessor, HostileAnswersAreErrorsNamingTheField) {
  const std::map<std::string, std::string> cases = {
      {"not json", "not a JSON object"},
      {"[]", "not a JSON object"},
      {R"({"kind": "Pod", "metadata": {}})", "kind"},
      {R"({"metadata": {}})", "kind"},
      {R"({"kind": "DaemonSet"})", "metadata"},
      {R"({"kind": "DaemonSet", "metadata": []})", "metadata"},
      {R"({"kind": "DaemonSet", "metadata": {"deletionTimestamp": 5}})",
       "metadata.deletionTimestamp"},
  };
  for (const auto& [body, field] : cases) {
    auto stays = daemonset_stays(body);
    ASSERT_FALSE(stays) << body;
    EXPECT_NE(stays.error().find(field), std::string::npos) << body << ": " << stays.error();
  }
}

TEST(HandoverSuccessor, ARollingUpdateKeepsThePluginsOwnDaemonSet) {
  DaemonSetServer server;
  server.answers[std::string(kPluginPath)] = {
      200, R"({"kind": "DaemonSet", "metadata": {"name": "p"}})"};
  EXPECT_EQ(staying_successor(server, kCandidates), "kube-system/xpu-device-plugin-daemonset");
  EXPECT_EQ(server.asked, (std::vector<std::string>{"GET " + std::string(kPluginPath)}));
}

TEST(HandoverSuccessor, ASwitchToDraHasTheDriversDaemonSet) {
  DaemonSetServer server;  // the plugin's own is gone
  server.answers[std::string(kDriverPath)] = {200, std::string(kDaemonSet)};
  EXPECT_EQ(staying_successor(server, kCandidates), "kube-system/xpu-dra-driver");
  EXPECT_EQ(server.asked.size(), 2U);
}

TEST(HandoverSuccessor, AnUninstallHasNone) {
  DaemonSetServer server;  // both gone, or the plugin's being deleted in the foreground
  EXPECT_EQ(staying_successor(server, kCandidates), "");
  server.answers[std::string(kPluginPath)] = {200, std::string(kDeleting)};
  EXPECT_EQ(staying_successor(server, kCandidates), "");
}

TEST(HandoverSuccessor, AnAnswerThatCannotBeReadCountsAsNoSuccessor) {
  DaemonSetServer server;
  // The rights went before the plugin asked (an uninstall deletes the RBAC too), and garbage.
  server.answers[std::string(kPluginPath)] = {403, status_body(403, "Forbidden")};
  server.answers[std::string(kDriverPath)] = {200, "{\"kind\": \"DaemonSet\"}"};
  EXPECT_EQ(staying_successor(server, kCandidates), "");
  EXPECT_TRUE(staying_successor(server, {}).empty());
}

}  // namespace
}  // namespace shim::node_status
