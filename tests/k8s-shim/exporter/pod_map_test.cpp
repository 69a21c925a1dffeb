#include "k8s-shim/exporter/pod_map.h"

#include <gtest/gtest.h>

namespace shim::exporter {
namespace {

struct Claim {
  std::string resource;
  std::vector<std::string> ids;
};

void add_container(v1::ListPodResourcesResponse& reply, const std::string& ns,
                   const std::string& pod, const std::string& container,
                   const std::vector<Claim>& claims) {
  v1::PodResources* entry = nullptr;
  for (auto& existing : *reply.mutable_pod_resources())
    if (existing.namespace_() == ns && existing.name() == pod) entry = &existing;
  if (!entry) {
    entry = reply.add_pod_resources();
    entry->set_namespace_(ns);
    entry->set_name(pod);
  }
  auto* resources = entry->add_containers();
  resources->set_name(container);
  for (const auto& claim : claims) {
    auto* devices = resources->add_devices();
    devices->set_resource_name(claim.resource);
    for (const auto& id : claim.ids) devices->add_device_ids(id);
  }
}

TEST(PodMap, MapsEveryXpuUuidToItsContainer) {
  v1::ListPodResourcesResponse reply;
  add_container(reply, "ml", "train-0", "worker", {{"kunlunxin.com/xpu", {"uuid-a", "uuid-b"}}});
  add_container(reply, "ml", "train-0", "sidecar", {{"kunlunxin.com/xpu", {"uuid-c"}}});
  add_container(reply, "default", "demo", "main", {{"kunlunxin.com/R200", {"uuid-d"}}});

  PodMap pods = PodMapBuilder().update(reply);

  EXPECT_EQ(pods, (PodMap{{"uuid-a", {"ml", "train-0", "worker"}},
                          {"uuid-b", {"ml", "train-0", "worker"}},
                          {"uuid-c", {"ml", "train-0", "sidecar"}},
                          {"uuid-d", {"default", "demo", "main"}}}));
}

// A device of a ResourceClaim as the kubelet lists it in dynamic_resources.
struct DraDevice {
  std::string driver, device;
  std::vector<std::string> cdi_names;
};

void add_dra_container(v1::ListPodResourcesResponse& reply, const std::string& ns,
                       const std::string& pod, const std::string& container,
                       const std::vector<DraDevice>& devices) {
  auto* entry = reply.add_pod_resources();
  entry->set_namespace_(ns);
  entry->set_name(pod);
  auto* resources = entry->add_containers();
  resources->set_name(container);
  auto* dynamic = resources->add_dynamic_resources();
  dynamic->set_claim_name(pod + "-xpus");
  dynamic->set_claim_namespace(ns);
  for (const auto& device : devices) {
    auto* resource = dynamic->add_claim_resources();
    resource->set_driver_name(device.driver);
    resource->set_pool_name("node-1");
    resource->set_device_name(device.device);
    for (const auto& name : device.cdi_names) resource->add_cdi_devices()->set_name(name);
  }
}

TEST(PodMap, CardsGrantedThroughDraBelongToTheirContainer) {
  v1::ListPodResourcesResponse reply;
  // As the 1.34 kubelet lists them: each device with the CDI names of the devices before it.
  add_dra_container(
      reply, "ml", "train-dra", "worker",
      {{"xpu.kunlunxin.com", "xpu-0", {"kunlunxin.com/xpu=uuid-a"}},
       {"xpu.kunlunxin.com",
        "xpu-1",
        {"kunlunxin.com/xpu=uuid-a", "kunlunxin.com/xpu=uuid-b", "kunlunxin.com/claim=0f9e-req"}}});
  // Another driver's device, and one of ours named by index only: neither is a card's UUID.
  add_dra_container(reply, "ml", "other", "main",
                    {{"gpu.example.com", "gpu-0", {"kunlunxin.com/xpu=uuid-x"}},
                     {"xpu.kunlunxin.com", "xpu-7", {"kunlunxin.com/xpu=7"}}});
  add_container(reply, "default", "plugin", "main", {{"kunlunxin.com/xpu", {"uuid-c"}}});

  PodMap pods = PodMapBuilder().update(reply);

  EXPECT_EQ(pods, (PodMap{{"uuid-a", {"ml", "train-dra", "worker"}},
                          {"uuid-b", {"ml", "train-dra", "worker"}},
                          {"uuid-c", {"default", "plugin", "main"}}}));
}

TEST(PodMap, IgnoresResourcesThatAreNotXpus) {
  v1::ListPodResourcesResponse reply;
  add_container(reply, "default", "mixed", "main",
                {{"nvidia.com/gpu", {"GPU-1"}},
                 {"example.com/kunlunxin.com/xpu", {"uuid-x"}},
                 {"kunlunxin.com/xpu", {"uuid-a"}}});
  add_container(reply, "default", "cpu-only", "main", {});
  reply.mutable_pod_resources(0)->mutable_containers(0)->add_cpu_ids(3);

  PodMap pods = PodMapBuilder().update(reply);

  EXPECT_EQ(pods, (PodMap{{"uuid-a", {"default", "mixed", "main"}}}));
}

TEST(PodMap, SharedReplicasLabelTheCardTheyAreOf) {
  // --enable-xpu-share: the kubelet lists replicas `<uuid>::<n>`, the renderer looks up UUIDs.
  v1::ListPodResourcesResponse reply;
  add_container(reply, "ml", "infer-0", "main",
                {{"kunlunxin.com/xpu-shared", {"uuid-a::0", "uuid-a::1"}}});
  add_container(reply, "ml", "infer-1", "main", {{"kunlunxin.com/R200-shared", {"uuid-b::3"}}});

  EXPECT_EQ(PodMapBuilder().update(reply),
            (PodMap{{"uuid-a", {"ml", "infer-0", "main"}}, {"uuid-b", {"ml", "infer-1", "main"}}}));
}

TEST(PodMap, MemoryUnitsLabelTheCardTheyAreOf) {
  // --xpu-share-memory-unit-mib: the kubelet lists units `<uuid>::m<k>` of vxpu-memory.
  v1::ListPodResourcesResponse reply;
  add_container(reply, "ml", "infer-0", "main",
                {{"kunlunxin.com/vxpu-memory", {"uuid-a::m0", "uuid-a::m7"}}});
  add_container(reply, "ml", "infer-1", "main",
                {{"kunlunxin.com/P800-vxpu-memory", {"uuid-b::m12"}}});

  EXPECT_EQ(PodMapBuilder().update(reply),
            (PodMap{{"uuid-a", {"ml", "infer-0", "main"}}, {"uuid-b", {"ml", "infer-1", "main"}}}));
}

TEST(PodMap, ReadsTheResourcesOfTheConfiguredDomainOnly) {
  // --resource-name example.com/accel (the chart's customizedResourceName), per model or shared.
  v1::ListPodResourcesResponse reply;
  add_container(reply, "ml", "train-0", "main",
                {{"example.com/accel", {"uuid-a"}}, {"kunlunxin.com/xpu", {"uuid-x"}}});
  add_container(reply, "ml", "train-1", "main", {{"example.com/R200", {"uuid-b"}}});
  add_container(reply, "ml", "infer-0", "main", {{"example.com/xpu-shared", {"uuid-c::1"}}});
  add_container(reply, "ml", "other", "main", {{"example.company/accel", {"uuid-y"}}});

  EXPECT_EQ(PodMapBuilder("example.com").update(reply),
            (PodMap{{"uuid-a", {"ml", "train-0", "main"}},
                    {"uuid-b", {"ml", "train-1", "main"}},
                    {"uuid-c", {"ml", "infer-0", "main"}}}));
}

TEST(PodMap, EmptyReplyOrPodsWithoutDevicesGiveNoOwners) {
  PodMapBuilder builder;
  EXPECT_TRUE(builder.update(v1::ListPodResourcesResponse()).empty());

  v1::ListPodResourcesResponse finished;
  add_container(finished, "default", "done", "main", {{"kunlunxin.com/xpu", {}}});
  EXPECT_TRUE(builder.update(finished).empty());
}

TEST(PodMap, SkipsContainersWithoutNamesAndEmptyIds) {
  v1::ListPodResourcesResponse reply;
  add_container(reply, "", "nameless-ns", "main", {{"kunlunxin.com/xpu", {"uuid-a"}}});
  add_container(reply, "default", "p", "", {{"kunlunxin.com/xpu", {"uuid-b"}}});
  add_container(reply, "default", "q", "main", {{"kunlunxin.com/xpu", {"", "uuid-c"}}});

  EXPECT_EQ(PodMapBuilder().update(reply), (PodMap{{"uuid-c", {"default", "q", "main"}}}));
}

TEST(PodMap, CardListedTwiceInOneReplyGoesToTheFirstByName) {
  v1::ListPodResourcesResponse reply;
  add_container(reply, "team-b", "old", "main", {{"kunlunxin.com/xpu", {"uuid-a"}}});
  add_container(reply, "team-a", "new", "main", {{"kunlunxin.com/xpu", {"uuid-a"}}});

  EXPECT_EQ(PodMapBuilder().update(reply), (PodMap{{"uuid-a", {"team-a", "new", "main"}}}));
}

TEST(PodMap, NewerClaimWinsOverAFinishedPodStillListed) {
  PodMapBuilder builder;
  v1::ListPodResourcesResponse before;
  add_container(before, "team-z", "finished", "main", {{"kunlunxin.com/xpu", {"uuid-a"}}});
  EXPECT_EQ(builder.update(before), (PodMap{{"uuid-a", {"team-z", "finished", "main"}}}));

  // The kubelet gave the card to a new pod but still lists the finished one (listed first).
  v1::ListPodResourcesResponse after = before;
  add_container(after, "team-a", "next", "main", {{"kunlunxin.com/xpu", {"uuid-a"}}});
  EXPECT_EQ(builder.update(after), (PodMap{{"uuid-a", {"team-a", "next", "main"}}}));
  // Stable on the following replies, in whatever order the kubelet lists the pods.
  v1::ListPodResourcesResponse reordered;
  add_container(reordered, "team-a", "next", "main", {{"kunlunxin.com/xpu", {"uuid-a"}}});
  add_container(reordered, "team-z", "finished", "main", {{"kunlunxin.com/xpu", {"uuid-a"}}});
  EXPECT_EQ(builder.update(reordered), (PodMap{{"uuid-a", {"team-a", "next", "main"}}}));

  // Once the finished pod is gone for good, the card stays with its holder.
  v1::ListPodResourcesResponse cleaned;
  add_container(cleaned, "team-a", "next", "main", {{"kunlunxin.com/xpu", {"uuid-a"}}});
  EXPECT_EQ(builder.update(cleaned), (PodMap{{"uuid-a", {"team-a", "next", "main"}}}));
}

TEST(PodMap, ClaimThatDisappearsAndReturnsCountsAsNew) {
  PodMapBuilder builder;
  v1::ListPodResourcesResponse both;
  add_container(both, "a", "first", "main", {{"kunlunxin.com/xpu", {"uuid-a"}}});
  add_container(both, "b", "second", "main", {{"kunlunxin.com/xpu", {"uuid-a"}}});
  EXPECT_EQ(builder.update(both).at("uuid-a").pod, "first");

  v1::ListPodResourcesResponse only_second;
  add_container(only_second, "b", "second", "main", {{"kunlunxin.com/xpu", {"uuid-a"}}});
  EXPECT_EQ(builder.update(only_second).at("uuid-a").pod, "second");

  // "first" comes back (a new pod with the same name got the card): newer than "second".
  EXPECT_EQ(builder.update(both).at("uuid-a").pod, "first");
}

}  // namespace
}  // namespace shim::exporter
