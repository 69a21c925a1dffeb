#include "k8s-shim/dra/kube/kube_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "k8s-shim/dra/kube/api_paths.h"
#include "k8s-shim/kube/api_names.h"
#include "tests/k8s-shim/dra/kube/replay_transport.h"

namespace shim::dra {
namespace {

using testing::ReplayTransport;

TEST(KubeApi, GetsAClaim) {
  ReplayTransport transport;
  KubeApi api(transport);
  transport.answer_recorded(200, "resourceclaim_allocated.json");
  auto claim = api.get_resource_claim("default", "train-xpu");
  ASSERT_TRUE(claim) << claim.error().message;
  EXPECT_EQ(claim->results.size(), 2u);
  ASSERT_EQ(transport.requests.size(), 1u);
  EXPECT_EQ(transport.requests[0].method, "GET");
  EXPECT_EQ(transport.requests[0].target,
            "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/train-xpu");
  EXPECT_EQ(transport.requests[0].body, "");
}

TEST(KubeApi, TellsNotFoundAndConflictApart) {
  ReplayTransport transport;
  KubeApi api(transport);
  transport.answer_recorded(404, "resourceclaim_notfound.json");
  auto missing = api.get_resource_claim("default", "no-such-claim");
  ASSERT_FALSE(missing);
  EXPECT_TRUE(missing.error().not_found());
  EXPECT_FALSE(missing.error().conflict());
  EXPECT_EQ(missing.error().reason, "NotFound");
  EXPECT_NE(missing.error().message.find("GET /apis/resource.k8s.io/v1/namespaces/default/"
                                         "resourceclaims/no-such-claim"),
            std::string::npos)
      << missing.error().message;
  EXPECT_NE(missing.error().message.find("\"no-such-claim\" not found"), std::string::npos);

  transport.answer_recorded(409, "resourceslice_update_conflict.json");
  ResourceSlice slice;
  slice.name = "node-a-xpu.kunlunxin.com-xdh7m";
  slice.resource_version = "1";
  slice.spec.node_name = "node-a";
  auto conflict = api.update_resource_slice(slice);
  ASSERT_FALSE(conflict);
  EXPECT_TRUE(conflict.error().conflict());
  EXPECT_FALSE(conflict.error().not_found());
  EXPECT_EQ(conflict.error().reason, "Conflict");
  EXPECT_NE(conflict.error().message.find("PUT "), std::string::npos);
  EXPECT_NE(conflict.error().message.find("the object has been modified"), std::string::npos);
}

TEST(KubeApi, ReportsANonStatusErrorBodyShortly) {
  ReplayTransport transport;
  KubeApi api(transport);
  transport.answer(502, "<html>" + std::string(10000, 'x') + "</html>");
  auto answer = api.get_resource_claim("default", "a");
  ASSERT_FALSE(answer);
  EXPECT_EQ(answer.error().code, 502);
  EXPECT_LT(answer.error().message.size(), 400u);
  transport.fail("connect refused");
  auto refused = api.get_resource_claim("default", "a");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, 0);
  EXPECT_NE(refused.error().message.find("connect refused"), std::string::npos);
}

TEST(KubeApi, RefusesA2xxBodyItCannotRead) {
  ReplayTransport transport;
  KubeApi api(transport);
  transport.answer(200, "garbage");
  auto answer = api.list_resource_slices("xpu.kunlunxin.com", "node-a");
  ASSERT_FALSE(answer);
  EXPECT_NE(answer.error().message.find("GET /apis/resource.k8s.io/v1/resourceslices"),
            std::string::npos);
}

TEST(KubeApi, ListsOneNodesSlicesWithFieldSelectors) {
  ReplayTransport transport;
  KubeApi api(transport);
  transport.answer_recorded(200, "resourceslice_list_one.json");
  auto slices = api.list_resource_slices("xpu.kunlunxin.com", "node-a");
  ASSERT_TRUE(slices) << slices.error().message;
  EXPECT_EQ(slices->size(), 1u);
  // The same target the recording was made with.
  EXPECT_EQ(transport.requests.at(0).target,
            "/apis/resource.k8s.io/v1/resourceslices?fieldSelector="
            "spec.driver%3Dxpu.kunlunxin.com%2Cspec.nodeName%3Dnode-a");
}

TEST(KubeApi, CreatesUpdatesAndDeletesSlices) {
  ReplayTransport transport;
  KubeApi api(transport);
  ResourceSlice slice;
  slice.spec.driver = "xpu.kunlunxin.com";
  slice.spec.node_name = "node-a";
  slice.spec.pool = {.name = "node-a", .generation = 1, .resource_slice_count = 1};

  transport.answer_recorded(201, "resourceslice_create.json");
  auto created = api.create_resource_slice(slice);
  ASSERT_TRUE(created) << created.error().message;
  EXPECT_EQ(created->name, "node-a-xpu.kunlunxin.com-xdh7m");
  EXPECT_EQ(transport.requests.at(0).method, "POST");
  EXPECT_EQ(transport.requests.at(0).target, "/apis/resource.k8s.io/v1/resourceslices");
  auto body = nlohmann::json::parse(transport.requests.at(0).body);
  EXPECT_EQ(body["metadata"]["generateName"], "node-a-xpu.kunlunxin.com-");

  transport.answer_recorded(200, "resourceslice_update.json");
  ResourceSlice change = created.value();
  change.spec.pool.generation = 2;
  auto updated = api.update_resource_slice(change);
  ASSERT_TRUE(updated) << updated.error().message;
  EXPECT_EQ(updated->resource_version, "206");
  EXPECT_EQ(transport.requests.at(1).method, "PUT");
  EXPECT_EQ(transport.requests.at(1).target,
            "/apis/resource.k8s.io/v1/resourceslices/node-a-xpu.kunlunxin.com-xdh7m");
  body = nlohmann::json::parse(transport.requests.at(1).body);
  EXPECT_EQ(body["metadata"]["resourceVersion"], "203");
  EXPECT_EQ(body["spec"]["pool"]["generation"], 2);

  transport.answer_recorded(200, "resourceslice_delete.json");
  auto deleted = api.delete_resource_slice("node-a-xpu.kunlunxin.com-xdh7m");
  ASSERT_TRUE(deleted) << deleted.error().message;
  EXPECT_EQ(transport.requests.at(2).method, "DELETE");
  EXPECT_EQ(transport.requests.at(2).target,
            "/apis/resource.k8s.io/v1/resourceslices/node-a-xpu.kunlunxin.com-xdh7m");
  EXPECT_EQ(transport.requests.at(2).body, "");

  transport.answer_recorded(404, "resourceslice_get_notfound.json");
  auto gone = api.delete_resource_slice("node-a-xpu.kunlunxin.com-gone1");
  ASSERT_FALSE(gone);
  EXPECT_TRUE(gone.error().not_found());
}

TEST(KubeApi, RefusesBadNamesBeforeSending) {
  ReplayTransport transport;
  KubeApi api(transport);
  EXPECT_FALSE(api.get_resource_claim("default/../kube-system", "a"));
  EXPECT_FALSE(api.get_resource_claim("default", "a/../../secrets"));
  EXPECT_FALSE(api.get_resource_claim("Default", "a"));
  EXPECT_FALSE(api.get_resource_claim("default", ""));
  EXPECT_FALSE(api.get_resource_claim("a.b", "a"));  // a namespace is a label
  EXPECT_FALSE(api.list_resource_slices("xpu.kunlunxin.com", "node-a,spec.driver=x"));
  EXPECT_FALSE(api.delete_resource_slice("a?b"));
  EXPECT_FALSE(api.delete_resource_slice(std::string(254, 'a')));
  ResourceSlice named;
  named.name = "x";
  named.spec.node_name = "node-a";
  EXPECT_FALSE(api.create_resource_slice(named));  // create uses generateName
  ResourceSlice no_version;
  no_version.name = "x";
  EXPECT_FALSE(api.update_resource_slice(no_version));
  EXPECT_TRUE(transport.requests.empty());
}

TEST(ApiPaths, ValidatesAndEncodes) {
  EXPECT_TRUE(kube::is_dns_label("kube-system"));
  EXPECT_FALSE(kube::is_dns_label("-a"));
  EXPECT_FALSE(kube::is_dns_label(std::string(64, 'a')));
  EXPECT_TRUE(kube::is_dns_subdomain("node-a.example.com"));
  EXPECT_FALSE(kube::is_dns_subdomain("a..b"));
  EXPECT_FALSE(kube::is_dns_subdomain("a."));
  EXPECT_EQ(kube::percent_encode("a=b,c d/é"), "a%3Db%2Cc%20d%2F%C3%A9");
}

}  // namespace
}  // namespace shim::dra
