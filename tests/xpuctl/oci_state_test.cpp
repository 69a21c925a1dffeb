// The container state the runtime hands xpuctl's hooks, and who the container is: the owner of
// a share's instance comes from the runtime that wrote the spec (or the claim the DRA driver
// names), never from annotation keys a pod can put into its own spec.
#include "xpuctl/oci_state.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace xpuctl {
namespace {

constexpr const char* kId = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

std::string containerd_bundle(const std::string& id = kId) {
  return "/run/containerd/io.containerd.runtime.v2.task/k8s.io/" + id;
}

// A state as runc hands it to a hook: `annotations` as the runtime wrote them into the spec.
std::string state(const nlohmann::json& annotations, const std::string& bundle,
                  const std::string& id = kId) {
  return nlohmann::json{{"ociVersion", "1.2.0"}, {"id", id},         {"status", "created"},
                        {"pid", 4242},           {"bundle", bundle}, {"annotations", annotations}}
      .dump();
}

const nlohmann::json kContainerdKeys = {{"io.kubernetes.cri.container-type", "container"},
                                        {"io.kubernetes.cri.sandbox-namespace", "team"},
                                        {"io.kubernetes.cri.sandbox-name", "train-0"},
                                        {"io.kubernetes.cri.container-name", "main"}};

const nlohmann::json kCrioKeys = {{"io.kubernetes.cri-o.ContainerID", kId},
                                  {"io.kubernetes.pod.namespace", "team"},
                                  {"io.kubernetes.pod.name", "train-0"},
                                  {"io.kubernetes.container.name", "main"}};

std::string owner(const std::string& json, std::string_view claim_namespace = {}) {
  auto parsed = parse_oci_state(json);
  EXPECT_TRUE(parsed) << parsed.error();
  return parsed ? owner_of_container(*parsed, claim_namespace) : "";
}

TEST(OciState, TheFieldsTheHooksUse) {
  auto parsed = parse_oci_state(state(kContainerdKeys, containerd_bundle()));
  ASSERT_TRUE(parsed) << parsed.error();
  EXPECT_EQ(parsed->id, kId);
  EXPECT_EQ(parsed->pid, 4242);
  EXPECT_EQ(parsed->bundle, containerd_bundle());
  EXPECT_EQ(parsed->annotations.at("io.kubernetes.cri.container-name"), "main");
  EXPECT_EQ(instance_id_of_container(parsed->id), "0123456789ab");
}

TEST(OciState, InputThatIsNoStateIsRefusedWithWhatIsWrong) {
  for (const std::string bad :
       {"", "not json", "[1]", R"({"id":""})", R"({"id":42})", R"({"status":"created"})"}) {
    auto parsed = parse_oci_state(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_NE(parsed.error().find("standard input"), std::string::npos) << parsed.error();
  }
  EXPECT_FALSE(parse_oci_state(std::string(kMaxOciStateBytes + 1, ' ')));
  // Odd optional fields are dropped, not trusted.
  for (const std::string odd :
       {R"({"id":"a","pid":-1})", R"({"id":"a","pid":"42"})", R"({"id":"a","pid":1e30})",
        R"({"id":"a","pid":99999999999})", R"({"id":"a","bundle":7,"annotations":[1]})"}) {
    auto parsed = parse_oci_state(odd);
    ASSERT_TRUE(parsed) << odd;
    EXPECT_EQ(parsed->pid, 0) << odd;
    EXPECT_EQ(owner_of_container(*parsed), "") << odd;
  }
}

TEST(OciState, EachRuntimeIsKnownByWhatOnlyItCanWrite) {
  EXPECT_EQ(owner(state(kContainerdKeys, containerd_bundle())), "team/train-0/main");
  EXPECT_EQ(owner(state(kCrioKeys, "/run/containers/storage/overlay-containers/" +
                                       std::string(kId) + "/userdata")),
            "team/train-0/main");
  // Without the runtime's own mark, the keys are anyone's.
  EXPECT_EQ(owner(state(kContainerdKeys, "/var/lib/other-runtime/" + std::string(kId))), "");
  EXPECT_EQ(owner(state(kContainerdKeys, containerd_bundle("another-container"))), "");
  EXPECT_EQ(owner(state(kContainerdKeys, containerd_bundle().substr(0, 40))), "");
  auto crio_without_proof = kCrioKeys;
  crio_without_proof["io.kubernetes.cri-o.ContainerID"] = "guessed";
  EXPECT_EQ(owner(state(crio_without_proof, "/run/containers/storage/x")), "");
}

// On CRI-O with the pod's annotations allowed into the container's spec, the pod writes
// containerd's keys naming another namespace's pod: CRI-O wrote this spec, so only CRI-O's keys
// count. On containerd with pod annotations passed through, the same with CRI-O's keys.
TEST(OciState, APodsCopiedAnnotationsOfTheOtherRuntimeNameNoOne) {
  auto on_crio = kCrioKeys;
  on_crio["io.kubernetes.cri.sandbox-namespace"] = "victim";
  on_crio["io.kubernetes.cri.sandbox-name"] = "their-pod";
  on_crio["io.kubernetes.cri.container-name"] = "main";
  EXPECT_EQ(owner(state(on_crio, "/run/containers/storage/overlay-containers/x/userdata")),
            "team/train-0/main");

  auto on_containerd = kContainerdKeys;
  on_containerd["io.kubernetes.cri-o.ContainerID"] = "not-this-one";
  on_containerd["io.kubernetes.pod.namespace"] = "victim";
  on_containerd["io.kubernetes.pod.name"] = "their-pod";
  on_containerd["io.kubernetes.container.name"] = "main";
  EXPECT_EQ(owner(state(on_containerd, containerd_bundle())), "team/train-0/main");
}

TEST(OciState, TheClaimsNamespaceIsTheOwnersNamespace) {
  const std::string json = state(kContainerdKeys, containerd_bundle());
  EXPECT_EQ(owner(json, "team"), "team/train-0/main");
  // A pod uses only claims of its namespace: annotations naming another are not the runtime's
  // word on this container, and give no owner.
  EXPECT_EQ(owner(json, "victim"), "");
  // Names that are none stay out of the exporter's labels.
  auto odd = kContainerdKeys;
  odd["io.kubernetes.cri.sandbox-name"] = "Bad Pod";
  EXPECT_EQ(owner(state(odd, containerd_bundle()), "team"), "");
}

}  // namespace
}  // namespace xpuctl
