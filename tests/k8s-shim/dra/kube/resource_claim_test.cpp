#include "k8s-shim/dra/kube/resource_claim.h"

#include <gtest/gtest.h>

#include "tests/k8s-shim/dra/kube/replay_transport.h"

namespace shim::dra {
namespace {

using testing::recorded;

TEST(ResourceClaim, ReadsAnAllocatedClaim) {
  auto claim = parse_resource_claim(recorded("resourceclaim_allocated.json"));
  ASSERT_TRUE(claim) << claim.error();
  EXPECT_EQ(claim->name, "train-xpu");
  EXPECT_EQ(claim->namespace_name, "default");
  EXPECT_EQ(claim->uid, "521225ba-a34a-46e9-b94f-ba4b7bccfd20");
  EXPECT_TRUE(claim->allocated);
  ASSERT_EQ(claim->results.size(), 2u);
  EXPECT_EQ(claim->results[0],
            (DeviceAllocation{"xpu", "xpu.kunlunxin.com", "node-a", "xpu-0", false}));
  EXPECT_EQ(claim->results[1].device, "xpu-1");
}

TEST(ResourceClaim, ReadsAClaimWithoutAllocation) {
  auto claim = parse_resource_claim(recorded("resourceclaim_unallocated.json"));
  ASSERT_TRUE(claim) << claim.error();
  EXPECT_EQ(claim->name, "train-xpu");
  EXPECT_FALSE(claim->allocated);
  EXPECT_TRUE(claim->results.empty());
}

TEST(ResourceClaim, NamesAFieldOfTheWrongType) {
  auto bad_name = parse_resource_claim(R"({"metadata":{"name":5}})");
  ASSERT_FALSE(bad_name);
  EXPECT_NE(bad_name.error().find("metadata.name"), std::string::npos) << bad_name.error();

  auto bad_device = parse_resource_claim(
      R"({"status":{"allocation":{"devices":{"results":[{"device":"xpu-0"},{"device":["x"]}]}}}})");
  ASSERT_FALSE(bad_device);
  EXPECT_NE(bad_device.error().find("status.allocation.devices.results[1].device"),
            std::string::npos)
      << bad_device.error();

  auto bad_results =
      parse_resource_claim(R"({"status":{"allocation":{"devices":{"results":{}}}}})");
  ASSERT_FALSE(bad_results);
  EXPECT_NE(bad_results.error().find("status.allocation.devices.results"), std::string::npos);
}

TEST(ResourceClaim, ReadsThePodClaimNameOfAClaimMadeFromATemplate) {
  // As the ResourceClaim controller annotates a claim it made for pod.spec.resourceClaims[].name
  // "xpus" (k8s.io/api resource/v1 PodResourceClaimAnnotation).
  auto made =
      parse_resource_claim(R"({"metadata":{"name":"p-xpus-x7k2q","annotations":{"other":"1",)"
                           R"("resource.kubernetes.io/pod-claim-name":"xpus"}}})");
  ASSERT_TRUE(made) << made.error();
  EXPECT_EQ(made->pod_claim_name, "xpus");
  auto direct = parse_resource_claim(R"({"metadata":{"name":"c","annotations":{"a":"b"}}})");
  ASSERT_TRUE(direct) << direct.error();
  EXPECT_EQ(direct->pod_claim_name, "");
  // Hostile shapes are named; the value itself is checked where it becomes a path.
  auto wrong = parse_resource_claim(
      R"({"metadata":{"annotations":{"resource.kubernetes.io/pod-claim-name":7}}})");
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().find("metadata.annotations"), std::string::npos) << wrong.error();
  EXPECT_FALSE(parse_resource_claim(R"({"metadata":{"annotations":["x"]}})"));
}

TEST(ResourceClaim, ReadsAdminAccess) {
  auto claim = parse_resource_claim(R"({"status":{"allocation":{"devices":{"results":[
      {"request":"watch","driver":"xpu.kunlunxin.com","pool":"node-a","device":"xpu-2",
       "adminAccess":true},
      {"request":"own","driver":"xpu.kunlunxin.com","pool":"node-a","device":"xpu-3"}]}}}})");
  ASSERT_TRUE(claim) << claim.error();
  EXPECT_TRUE(claim->results.at(0).admin_access);
  EXPECT_FALSE(claim->results.at(1).admin_access);

  auto bad = parse_resource_claim(
      R"({"status":{"allocation":{"devices":{"results":[{"adminAccess":"yes"}]}}}})");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("results[0].adminAccess"), std::string::npos) << bad.error();
}

TEST(ResourceClaim, IgnoresUnknownFieldsAndRefusesGarbage) {
  auto claim = parse_resource_claim(
      R"({"kind":"ResourceClaim","metadata":{"name":"a","future":{"x":1}},"extra":[1,2]})");
  ASSERT_TRUE(claim) << claim.error();
  EXPECT_EQ(claim->name, "a");
  EXPECT_FALSE(parse_resource_claim(""));
  EXPECT_FALSE(parse_resource_claim("<html>bad gateway</html>"));
  EXPECT_FALSE(parse_resource_claim("[1,2]"));
  EXPECT_FALSE(parse_resource_claim(R"({"metadata":{"name":"a"})"));
  EXPECT_FALSE(parse_resource_claim(recorded("resourceclaim_notfound.json")));  // a Status
  EXPECT_FALSE(parse_resource_claim(std::string(100000, '[')));
}

// A share of a card (allowMultipleAllocations): the fields as k8s.io/api v0.37.2 resource/v1
// spells them (DeviceRequestAllocationResult.ShareID, .ConsumedCapacity).
std::string share_claim(std::string_view memory) {
  return R"({"kind":"ResourceClaim","metadata":{"name":"c","namespace":"ns","uid":"u"},
    "status":{"allocation":{"devices":{"results":[
      {"request":"xpu","driver":"xpu.kunlunxin.com","pool":"node-a","device":"xpu-0-shared",
       "shareID":"0b5c2a4e-7d1f-4c55-9a1e-2f3b4c5d6e7f",
       "consumedCapacity":{"memory":)" +
         std::string(memory) + R"(}}]}}}})";
}

TEST(ResourceClaim, ReadsAShareAndTheMemoryItConsumed) {
  auto claim = parse_resource_claim(share_claim(R"("8Gi")"));
  ASSERT_TRUE(claim) << claim.error();
  ASSERT_EQ(claim->results.size(), 1u);
  EXPECT_EQ(claim->results[0].share_id, "0b5c2a4e-7d1f-4c55-9a1e-2f3b4c5d6e7f");
  EXPECT_EQ(claim->results[0].consumed_memory, std::int64_t{8} << 30);

  auto bad = parse_resource_claim(share_claim(R"("8 gigs")"));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("status.allocation.devices.results[0].consumedCapacity.memory"),
            std::string::npos)
      << bad.error();
  EXPECT_FALSE(parse_resource_claim(share_claim("8589934592")));  // a Quantity is a string
}

}  // namespace
}  // namespace shim::dra
