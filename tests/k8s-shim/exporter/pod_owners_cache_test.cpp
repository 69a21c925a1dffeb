#include "k8s-shim/exporter/pod_owners_cache.h"

#include <gtest/gtest.h>

#include "tests/k8s-shim/exporter/pod_resources_replies.h"

namespace shim::exporter {
namespace {

using namespace std::chrono_literals;

using test::one_pod_holding;

struct ScriptedKubelet {
  std::vector<xpu::Result<v1::ListPodResourcesResponse>> replies;
  size_t calls = 0;
  xpu::Result<v1::ListPodResourcesResponse> operator()() {
    auto reply = replies.at(std::min(calls, replies.size() - 1));
    ++calls;
    return reply;
  }
};

TEST(PodOwnersCache, AsksTheKubeletAtMostOncePerMaxAge) {
  ScriptedKubelet kubelet{{one_pod_holding("demo", "uuid-a"), one_pod_holding("later", "uuid-a")}};
  PodOwnersCache cache([&kubelet] { return kubelet(); }, 2000ms);
  const auto t0 = PodOwnersCache::Clock::time_point{} + 1h;

  auto first = cache.get(t0);
  EXPECT_TRUE(first.up);
  EXPECT_EQ(first.pods.at("uuid-a").pod, "demo");
  EXPECT_EQ(cache.get(t0 + 1999ms).pods.at("uuid-a").pod, "demo");
  EXPECT_EQ(kubelet.calls, 1u);

  auto refreshed = cache.get(t0 + 2000ms);
  EXPECT_EQ(kubelet.calls, 2u);
  EXPECT_EQ(refreshed.pods.at("uuid-a").pod, "later");
}

TEST(PodOwnersCache, FailedListMeansDownWithoutPodLabelsAndIsRetriedAfterMaxAge) {
  ScriptedKubelet kubelet{{one_pod_holding("demo", "uuid-a"), xpu::Error{"connection refused"},
                           one_pod_holding("demo", "uuid-a")}};
  PodOwnersCache cache([&kubelet] { return kubelet(); }, 2000ms);
  const auto t0 = PodOwnersCache::Clock::time_point{} + 1h;

  EXPECT_TRUE(cache.get(t0).up);
  auto down = cache.get(t0 + 2s);
  EXPECT_FALSE(down.up);
  EXPECT_TRUE(down.pods.empty());
  EXPECT_FALSE(
      cache.get(t0 + 3s).up);  // failure cached too: a hung kubelet costs one deadline per max_age
  EXPECT_EQ(kubelet.calls, 2u);

  auto back = cache.get(t0 + 4s);
  EXPECT_TRUE(back.up);
  EXPECT_EQ(back.pods.at("uuid-a").pod, "demo");
}

TEST(PodOwnersCache, CallerThatStartedBeforeTheLastListUsesItsAnswer) {
  ScriptedKubelet kubelet{{one_pod_holding("demo", "uuid-a")}};
  PodOwnersCache cache([&kubelet] { return kubelet(); }, 2000ms);
  const auto t0 = PodOwnersCache::Clock::time_point{} + 1h;
  EXPECT_TRUE(cache.get(t0).up);
  EXPECT_TRUE(cache.get(t0 - 300ms).up);  // waited on the mutex while the first List ran
  EXPECT_EQ(kubelet.calls, 1u);
}

// get_shared's object stands for its content: kept while List answers the same, replaced when
// the answer (or the kubelet's being up) changes. The /metrics body cache relies on it.
TEST(PodOwnersCache, SharedOwnersAreReplacedOnlyWhenTheAnswerChanges) {
  ScriptedKubelet kubelet{{one_pod_holding("demo", "uuid-a"), one_pod_holding("demo", "uuid-a"),
                           one_pod_holding("later", "uuid-a"), xpu::Error{"connection refused"},
                           xpu::Error{"connection refused"}}};
  PodOwnersCache cache([&kubelet] { return kubelet(); }, 2000ms);
  const auto t0 = PodOwnersCache::Clock::time_point{} + 1h;

  auto demo = cache.get_shared(t0);
  EXPECT_EQ(cache.get_shared(t0 + 2s), demo);  // asked again, same answer
  auto later = cache.get_shared(t0 + 4s);
  EXPECT_NE(later, demo);
  EXPECT_EQ(later->pods.at("uuid-a").pod, "later");
  auto down = cache.get_shared(t0 + 6s);
  EXPECT_NE(down, later);
  EXPECT_FALSE(down->up);
  EXPECT_EQ(cache.get_shared(t0 + 8s), down);  // still down
  EXPECT_EQ(kubelet.calls, 5u);
}

}  // namespace
}  // namespace shim::exporter
