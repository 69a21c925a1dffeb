#include "k8s-shim/dra/slices/slice_publisher.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "k8s-shim/dra/slices/slice_content.h"
#include "k8s-shim/pod_resources/held_cards.h"
#include "tests/k8s-shim/dra/kube/fake_slice_server.h"
#include "tests/support/card_builder.h"

namespace shim::dra {
namespace {

using testing::FakeSliceServer;
using Clock = std::chrono::steady_clock;
using std::chrono::seconds;

xpu::DeviceView cards(unsigned count, unsigned unhealthy = 99) {
  std::vector<xpu::DeviceInfo> devices;
  for (unsigned i = 0; i < count; ++i)
    devices.push_back(xpu::test::card(i)
                          .uuid("XPU-" + std::to_string(i))
                          .model("P800")
                          .numa_node(0)
                          .memory_total_bytes(std::uint64_t{32} << 30)
                          .healthy(i != unhealthy));
  return xpu::test::present(std::move(devices), "5.0.21");
}

// The slice as the publisher would write it, as JSON the server would hold, with the memory in
// the server's canonical binary form.
nlohmann::json stored_slice(const xpu::DeviceView& view, std::int64_t generation,
                            std::string name = "node-a-xpu.kunlunxin.com-abcde") {
  ResourceSlice slice;
  slice.name = std::move(name);
  slice.spec = desired_slice(view, "node-a", generation);
  auto json = nlohmann::json::parse(resource_slice_to_json(slice));
  for (auto& device : json["spec"]["devices"]) device["capacity"]["memory"]["value"] = "32Gi";
  return json;
}

struct Publisher : ::testing::Test {
  FakeSliceServer server;
  KubeApi api{server};
  SlicePublisher publisher{api, "node-a"};
  Clock::time_point now = Clock::now();

  const nlohmann::json& only_slice() {
    EXPECT_EQ(server.store().size(), 1u);
    return server.store().begin()->second;
  }
};

TEST_F(Publisher, PublishesNothingBeforeXpudAnswered) {
  EXPECT_FALSE(publisher.set_devices(xpu::DeviceView{}));
  publisher.reconcile(now);
  EXPECT_TRUE(server.requests.empty());
}

TEST_F(Publisher, CreatesWhenNone) {
  publisher.set_devices(cards(2));
  publisher.reconcile(now);
  EXPECT_EQ(publisher.writes(), 1u);
  EXPECT_EQ(server.count("GET"), 1u);
  EXPECT_EQ(server.count("POST"), 1u);
  const auto& slice = only_slice();
  EXPECT_EQ(slice["metadata"]["name"], "node-a-xpu.kunlunxin.com-1");
  EXPECT_EQ(slice["spec"]["pool"]["generation"], 1);
  EXPECT_EQ(slice["spec"]["devices"].size(), 2u);
}

TEST_F(Publisher, AdoptsAnEqualSliceWithoutWriting) {
  server.add(stored_slice(cards(2), 5));
  publisher.set_devices(cards(2));
  publisher.reconcile(now);
  EXPECT_EQ(publisher.writes(), 0u);
  EXPECT_EQ(server.requests.size(), 1u);  // the list
  // Nothing more to do until the resync.
  publisher.set_devices(cards(2));
  auto next = publisher.reconcile(now + seconds(1));
  EXPECT_EQ(server.requests.size(), 1u);
  EXPECT_GE(next, now + SlicePublisher::kResync);
}

// A leaving driver empties its pool and waits for exactly that write (dra_driver_role.cpp).
TEST_F(Publisher, IsUpToDateOnlyOnceTheLastAskedPoolIsWritten) {
  EXPECT_FALSE(publisher.up_to_date());  // nothing asked yet
  publisher.set_devices(cards(2));
  EXPECT_FALSE(publisher.up_to_date());
  publisher.reconcile(now);
  EXPECT_TRUE(publisher.up_to_date());

  xpu::DeviceView none = cards(2);
  none.devices.clear();
  EXPECT_TRUE(publisher.set_devices(none));
  EXPECT_FALSE(publisher.up_to_date());
  publisher.reconcile(now + seconds(1));
  EXPECT_TRUE(publisher.up_to_date());
  EXPECT_TRUE(only_slice()["spec"].value("devices", nlohmann::json::array()).empty());

  // A refused write leaves it behind.
  server.fail_next(500);
  publisher.set_devices(cards(1));
  publisher.reconcile(now + seconds(2));
  EXPECT_FALSE(publisher.up_to_date());
}

TEST_F(Publisher, UpdatesADifferentSlice) {
  server.add(stored_slice(cards(1), 5));
  publisher.set_devices(cards(2));
  publisher.reconcile(now);
  EXPECT_EQ(publisher.writes(), 1u);
  EXPECT_EQ(server.count("PUT"), 1u);
  EXPECT_EQ(only_slice()["spec"]["pool"]["generation"], 6);
  EXPECT_EQ(only_slice()["spec"]["devices"].size(), 2u);
}

TEST_F(Publisher, DeletesExtras) {
  server.add(stored_slice(cards(2), 3, "node-a-xpu.kunlunxin.com-old"));
  server.add(stored_slice(cards(1), 4, "node-a-xpu.kunlunxin.com-new"));
  publisher.set_devices(cards(2));
  publisher.reconcile(now);
  EXPECT_EQ(server.count("PUT"), 1u);
  EXPECT_EQ(server.count("DELETE"), 1u);
  EXPECT_EQ(publisher.writes(), 2u);
  EXPECT_EQ(only_slice()["metadata"]["name"], "node-a-xpu.kunlunxin.com-new");
  EXPECT_EQ(only_slice()["spec"]["pool"]["generation"], 5);
}

TEST_F(Publisher, AdoptsTheNewestEqualSliceAndDeletesOlderOnes) {
  server.add(stored_slice(cards(1), 3, "node-a-xpu.kunlunxin.com-old"));
  server.add(stored_slice(cards(2), 4, "node-a-xpu.kunlunxin.com-new"));
  publisher.set_devices(cards(2));
  publisher.reconcile(now);
  EXPECT_EQ(server.count("PUT"), 0u);
  EXPECT_EQ(server.count("DELETE"), 1u);
  EXPECT_EQ(publisher.writes(), 1u);
  EXPECT_EQ(only_slice()["metadata"]["name"], "node-a-xpu.kunlunxin.com-new");
}

TEST_F(Publisher, AFailedDeleteBacksOffAndIsRetriedWithoutRewriting) {
  server.add(stored_slice(cards(2), 3, "node-a-xpu.kunlunxin.com-old"));
  server.add(stored_slice(cards(1), 4, "node-a-xpu.kunlunxin.com-new"));
  publisher.set_devices(cards(2));
  server.fail_next_of("DELETE", 500);
  auto next = publisher.reconcile(now);  // list, update "new", delete "old" fails
  EXPECT_EQ(next, now + seconds(1));
  EXPECT_EQ(publisher.writes(), 1u);
  EXPECT_EQ(server.store().size(), 2u);

  publisher.reconcile(next);  // relist: "new" is right and newest, so only the delete is left
  EXPECT_EQ(server.count("PUT"), 1u);
  EXPECT_EQ(server.count("DELETE"), 2u);
  EXPECT_EQ(publisher.writes(), 2u);
  EXPECT_EQ(only_slice()["metadata"]["name"], "node-a-xpu.kunlunxin.com-new");
}

TEST_F(Publisher, OneWritePerChangeAndNoneForTheSameView) {
  publisher.set_devices(cards(4));
  publisher.reconcile(now);
  ASSERT_EQ(publisher.writes(), 1u);

  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(publisher.set_devices(cards(4)));
    publisher.reconcile(now + seconds(i + 1));
  }
  EXPECT_EQ(publisher.writes(), 1u);

  EXPECT_TRUE(publisher.set_devices(cards(4, /*unhealthy=*/2)));
  publisher.reconcile(now + seconds(10));
  EXPECT_EQ(publisher.writes(), 2u);
  auto healthy = only_slice()["spec"]["devices"][2]["attributes"]["healthy"];
  EXPECT_EQ(healthy, nlohmann::json({{"bool", false}}));
  EXPECT_EQ(only_slice()["spec"]["pool"]["generation"], 2);

  publisher.set_devices(cards(4));
  publisher.reconcile(now + seconds(11));
  EXPECT_EQ(publisher.writes(), 3u);
  EXPECT_EQ(only_slice()["spec"]["pool"]["generation"], 3);
  EXPECT_EQ(server.count("GET"), 1u);  // listed once, at the start
}

TEST_F(Publisher, ConflictRelistsAndRetriesAtOnce) {
  publisher.set_devices(cards(2));
  publisher.reconcile(now);
  std::string name = server.store().begin()->first;
  server.touch(name);  // someone else wrote it: our resourceVersion is stale

  publisher.set_devices(cards(2, 0));
  publisher.reconcile(now + seconds(1));
  // PUT (409), GET, PUT with the fresh version.
  ASSERT_GE(server.requests.size(), 5u);
  auto last = server.requests.end() - 3;
  EXPECT_EQ(last[0].method, "PUT");
  EXPECT_EQ(last[1].method, "GET");
  EXPECT_EQ(last[2].method, "PUT");
  EXPECT_EQ(publisher.writes(), 2u);
  EXPECT_EQ(only_slice()["spec"]["devices"][0]["attributes"]["healthy"],
            nlohmann::json({{"bool", false}}));
}

TEST_F(Publisher, RecreatesADeletedSlice) {
  publisher.set_devices(cards(2));
  publisher.reconcile(now);
  server.requests.clear();
  // Someone deleted our slice: the update answers 404, the relist finds none, we create.
  server.remove(server.store().begin()->first);
  publisher.set_devices(cards(3));
  publisher.reconcile(now + seconds(1));
  EXPECT_EQ(server.count("POST"), 1u);
  EXPECT_EQ(only_slice()["spec"]["devices"].size(), 3u);
  EXPECT_EQ(only_slice()["spec"]["pool"]["generation"], 2);
}

TEST_F(Publisher, BacksOffAfterFailures) {
  publisher.set_devices(cards(2));
  for (int i = 0; i < 7; ++i) server.fail_next(i % 2 ? 500 : 0);
  std::vector<seconds> waits;
  auto t = now;
  for (int i = 0; i < 7; ++i) {
    auto next = publisher.reconcile(t);
    waits.push_back(std::chrono::duration_cast<seconds>(next - t));
    // Called early: no request, same time back.
    std::size_t before = server.requests.size();
    EXPECT_EQ(publisher.reconcile(t + std::chrono::milliseconds(100)), next);
    EXPECT_EQ(server.requests.size(), before);
    t = next;
  }
  EXPECT_EQ(waits, (std::vector<seconds>{seconds(1), seconds(2), seconds(4), seconds(8),
                                         seconds(16), seconds(30), seconds(30)}));
  EXPECT_EQ(publisher.writes(), 0u);
  publisher.reconcile(t);
  EXPECT_EQ(publisher.writes(), 1u);
  EXPECT_EQ(server.store().size(), 1u);
  // The back-off starts again from 1 s at the next streak.
  publisher.set_devices(cards(3));
  server.fail_next(503);
  auto next = publisher.reconcile(t + seconds(1));
  EXPECT_EQ(next, t + seconds(2));
}

TEST_F(Publisher, RelistsAtTheResync) {
  publisher.set_devices(cards(2));
  auto next = publisher.reconcile(now);
  EXPECT_EQ(server.count("GET"), 1u);
  publisher.reconcile(next);
  EXPECT_EQ(server.count("GET"), 2u);
  EXPECT_EQ(publisher.writes(), 1u);  // found as written: no write
}

xpu::DeviceView with_fault(unsigned count, unsigned faulty, std::string reason) {
  xpu::DeviceView view = cards(count);
  view.devices[faulty].healthy = false;
  view.devices[faulty].health_reason = std::move(reason);
  view.devices[faulty].health_reason_kind = "driver_fault";
  return view;
}

TEST_F(Publisher, TaintsAnUnhealthyCardAndUntaintsItOnRecovery) {
  publisher.set_devices(cards(3));
  publisher.reconcile(now);
  publisher.set_devices(with_fault(3, 1, "device lost"));
  publisher.reconcile(now + seconds(1));
  const auto& devices = only_slice()["spec"]["devices"];
  EXPECT_FALSE(devices[0].contains("taints"));
  ASSERT_EQ(devices[1]["taints"].size(), 1u);
  EXPECT_EQ(devices[1]["taints"][0]["key"], "xpu.kunlunxin.com/driver_fault");
  EXPECT_EQ(devices[1]["taints"][0]["value"], "device-lost");
  EXPECT_EQ(devices[1]["taints"][0]["effect"], "NoSchedule");
  EXPECT_EQ(devices[1]["attributes"]["healthy"], nlohmann::json({{"bool", false}}));

  publisher.set_devices(cards(3));
  publisher.reconcile(now + seconds(2));
  EXPECT_FALSE(only_slice()["spec"]["devices"][1].contains("taints"));
  EXPECT_EQ(publisher.writes(), 3u);
}

TEST_F(Publisher, ATaintKeepsTheTimeTheServerGaveIt) {
  // The server stamps timeAdded; a later write (another card's change) sends it back unchanged,
  // or the server would stamp it again and restart a NoExecute toleration's clock.
  publisher.set_devices(with_fault(3, 1, "device lost"));
  publisher.reconcile(now);
  std::string stamped = only_slice()["spec"]["devices"][1]["taints"][0]["timeAdded"];
  ASSERT_FALSE(stamped.empty());
  xpu::DeviceView two_faults = with_fault(3, 1, "device lost");
  two_faults.devices[2].healthy = false;
  publisher.set_devices(two_faults);
  publisher.reconcile(now + seconds(1));
  EXPECT_EQ(publisher.writes(), 2u);
  const auto& put = nlohmann::json::parse(server.requests.back().body);
  EXPECT_EQ(put["spec"]["devices"][1]["taints"][0]["timeAdded"], stamped);
  EXPECT_FALSE(put["spec"]["devices"][2]["taints"][0].contains("timeAdded"));
  // Relisted at the resync: the stamped slice is what we want, no write.
  auto next = publisher.reconcile(now + seconds(2));
  publisher.reconcile(next);
  EXPECT_EQ(publisher.writes(), 2u);
}

TEST_F(Publisher, AServerThatDropsTaintsIsNotWrittenAgainAndAgain) {
  server.keep_taints(false);  // Kubernetes 1.35: DRADeviceTaints is off
  publisher.set_devices(with_fault(2, 0, "device lost"));
  auto next = publisher.reconcile(now);
  EXPECT_EQ(publisher.writes(), 1u);
  EXPECT_FALSE(only_slice()["spec"]["devices"][0].contains("taints"));
  EXPECT_EQ(only_slice()["spec"]["devices"][0]["attributes"]["healthy"],
            nlohmann::json({{"bool", false}}));
  for (int i = 0; i < 3; ++i) next = publisher.reconcile(next);  // resyncs: relist, no write
  EXPECT_EQ(publisher.writes(), 1u);
  EXPECT_GE(server.count("GET"), 3u);
  // Changes still get through, without taints.
  publisher.set_devices(cards(2));
  publisher.reconcile(next + seconds(1));
  EXPECT_EQ(publisher.writes(), 2u);
}

TEST_F(Publisher, KeepsTheLastListWhenXpudGoesAway) {
  publisher.set_devices(cards(2));
  publisher.reconcile(now);
  xpu::DeviceView gone;  // xpud absent with no last known list
  EXPECT_FALSE(publisher.set_devices(gone));
  publisher.reconcile(now + seconds(1));
  EXPECT_EQ(publisher.writes(), 1u);
  EXPECT_EQ(only_slice()["spec"]["devices"].size(), 2u);
}

// With memory shares on, the pool is a devices slice and a counters slice (slice_content.h).
struct SharedPool : Publisher {
  static constexpr SharePolicy kShares{.enabled = true};
  SlicePublisher sharing{api, "node-a", {}, kShares};

  // The stored slices: the devices slice, then the counters slice; fails the test otherwise.
  std::pair<nlohmann::json, nlohmann::json> pool() {
    nlohmann::json devices, counters;
    for (const auto& [name, slice] : server.store())
      (slice["spec"].contains("sharedCounters") ? counters : devices) = slice;
    EXPECT_EQ(server.store().size(), 2u);
    return {devices, counters};
  }
};

TEST_F(SharedPool, WritesTheDevicesAndTheirCountersAtOneGeneration) {
  sharing.set_devices(cards(2));
  sharing.reconcile(now);
  EXPECT_EQ(server.count("POST"), 2u);
  EXPECT_EQ(sharing.writes(), 2u);
  auto [devices, counters] = pool();
  for (const auto& slice : {devices, counters}) {
    EXPECT_EQ(slice["spec"]["pool"]["generation"], 1);
    EXPECT_EQ(slice["spec"]["pool"]["resourceSliceCount"], 2);
    EXPECT_EQ(slice["spec"]["nodeName"], "node-a");
  }
  ASSERT_EQ(devices["spec"]["devices"].size(), 4u);
  EXPECT_EQ(devices["spec"]["devices"][2]["name"], "xpu-0-shared");
  EXPECT_EQ(devices["spec"]["devices"][2]["allowMultipleAllocations"], true);
  EXPECT_FALSE(devices["spec"].contains("sharedCounters"));
  ASSERT_EQ(counters["spec"]["sharedCounters"].size(), 2u);
  EXPECT_EQ(counters["spec"]["sharedCounters"][1]["name"], "xpu-1");
  EXPECT_FALSE(counters["spec"].contains("devices"));
}

TEST_F(SharedPool, ARestartAdoptsThePoolWithoutWriting) {
  sharing.set_devices(cards(2));
  sharing.reconcile(now);
  SlicePublisher restarted{api, "node-a", {}, kShares};
  restarted.set_devices(cards(2));
  restarted.reconcile(now);
  EXPECT_EQ(restarted.writes(), 0u);
  EXPECT_EQ(server.count("GET"), 2u);
}

TEST_F(SharedPool, AChangeRewritesEverySliceAtTheNextGeneration) {
  sharing.set_devices(cards(2));
  sharing.reconcile(now);
  sharing.set_devices(cards(3));
  sharing.reconcile(now + seconds(1));
  EXPECT_EQ(server.count("PUT"), 2u);
  EXPECT_EQ(server.count("POST"), 2u);  // the first two only: the slices are reused
  auto [devices, counters] = pool();
  EXPECT_EQ(devices["spec"]["pool"]["generation"], 2);
  EXPECT_EQ(counters["spec"]["pool"]["generation"], 2);
  EXPECT_EQ(devices["spec"]["devices"].size(), 6u);
  EXPECT_EQ(counters["spec"]["sharedCounters"].size(), 3u);
}

TEST_F(SharedPool, TurningSharesOffLeavesTheOneDevicesSlice) {
  sharing.set_devices(cards(2));
  sharing.reconcile(now);
  publisher.set_devices(cards(2));  // the same node, shares off
  publisher.reconcile(now);
  EXPECT_EQ(server.count("PUT"), 1u);
  EXPECT_EQ(server.count("DELETE"), 1u);
  const auto& slice = only_slice();
  EXPECT_EQ(slice["spec"]["pool"]["generation"], 2);
  EXPECT_EQ(slice["spec"]["pool"]["resourceSliceCount"], 1);
  EXPECT_EQ(slice["spec"]["devices"].size(), 2u);
}

TEST_F(SharedPool, AHalfWrittenPoolIsWrittenWholeOneGenerationHigher) {
  sharing.set_devices(cards(2));
  server.fail_later_of("POST", 1, 500);  // the devices slice is created, its counters refused
  auto next = sharing.reconcile(now);
  EXPECT_EQ(next, now + seconds(1));
  ASSERT_EQ(server.store().size(), 1u);
  EXPECT_EQ(only_slice()["spec"]["pool"]["generation"], 1);

  sharing.reconcile(next);  // the newest generation is short of a slice: all of it again
  auto [devices, counters] = pool();
  EXPECT_EQ(devices["spec"]["pool"]["generation"], 2);
  EXPECT_EQ(counters["spec"]["pool"]["generation"], 2);
  EXPECT_EQ(server.count("PUT"), 1u);
  EXPECT_EQ(sharing.writes(), 3u);
}

// Card 1 of `cards(2)` with SR-IOV on and two virtual functions, xpu-2 and xpu-3.
xpu::DeviceView with_virtual_functions() {
  xpu::DeviceView view = cards(2);
  view.devices[1].pci_bus_id = "0000:5e:00.0";
  view.devices[1].sriov_enabled = true;
  for (unsigned index : {2u, 3u}) {
    xpu::DeviceInfo vf =
        xpu::test::card(index).model("R200-VF-16G").memory_total_bytes(std::uint64_t{16} << 30);
    vf.is_virtual_function = true;
    vf.physical_function = "0000:5e:00.0";
    view.devices.push_back(vf);
  }
  return view;
}

std::vector<std::string> device_names(const nlohmann::json& slice) {
  std::vector<std::string> names;
  for (const auto& device : slice["spec"]["devices"]) names.push_back(device["name"]);
  return names;
}

TEST_F(SharedPool, VirtualFunctionsComeWithTheirPhysicalFunctionsCountersWithoutShares) {
  publisher.set_devices(with_virtual_functions());
  publisher.reconcile(now);
  EXPECT_EQ(publisher.writes(), 2u);
  auto [devices, counters] = pool();
  EXPECT_EQ(device_names(devices), (std::vector<std::string>{"xpu-0", "xpu-2", "xpu-3"}));
  EXPECT_FALSE(devices["spec"]["devices"][0].contains("consumesCounters"));
  EXPECT_EQ(devices["spec"]["devices"][1]["consumesCounters"][0]["counterSet"], "xpu-1");
  ASSERT_EQ(counters["spec"]["sharedCounters"].size(), 1u);
  EXPECT_EQ(counters["spec"]["sharedCounters"][0]["name"], "xpu-1");
}

// Kubernetes 1.35: the first write shows the counters dropped, and the pool is written again
// without them, once; the VFs stay offered, the shares go.
TEST_F(SharedPool, AServerThatDropsCountersGetsThePoolWithoutThem) {
  server.keep_counters(false);
  sharing.set_devices(with_virtual_functions());
  auto next = sharing.reconcile(now);
  const auto& slice = only_slice();
  EXPECT_EQ(slice["spec"]["pool"]["generation"], 2);
  EXPECT_EQ(slice["spec"]["pool"]["resourceSliceCount"], 1);
  EXPECT_EQ(device_names(slice), (std::vector<std::string>{"xpu-0", "xpu-2", "xpu-3"}));
  EXPECT_EQ(server.count("POST"), 1u);  // the devices slice, then rewritten in place
  EXPECT_EQ(server.count("PUT"), 1u);
  EXPECT_EQ(sharing.writes(), 2u);
  for (int i = 0; i < 3; ++i) next = sharing.reconcile(next);  // resyncs: relist, no write
  EXPECT_EQ(sharing.writes(), 2u);
  // A restart learns it again at the cost of one more write pair, no more.
  SlicePublisher restarted{api, "node-a", {}, kShares};
  restarted.set_devices(with_virtual_functions());
  next = restarted.reconcile(now);
  EXPECT_EQ(restarted.writes(), 2u);
  EXPECT_EQ(only_slice()["spec"]["pool"]["generation"], 4);
  restarted.reconcile(next);
  EXPECT_EQ(restarted.writes(), 2u);
}

// A pool already written with counters (a second slice) loses the counters' slice too.
TEST_F(SharedPool, CountersDroppedAfterAnUpgradeWithTheGateOffLeaveOneSlice) {
  sharing.set_devices(cards(2));
  sharing.reconcile(now);
  ASSERT_EQ(server.store().size(), 2u);
  server.keep_counters(false);
  // The stored slices use counters, so the server keeps them on update: nothing to notice, the
  // pool stays whole. Only a new slice shows the gate, as after the pool's slices are deleted.
  for (const auto& name : [&] {
         std::vector<std::string> names;
         for (const auto& [name, slice] : server.store()) names.push_back(name);
         return names;
       }())
    server.remove(name);
  sharing.reconcile(now + SlicePublisher::kResync);
  const auto& slice = only_slice();
  EXPECT_EQ(device_names(slice), (std::vector<std::string>{"xpu-0", "xpu-1"}));
  EXPECT_EQ(slice["spec"]["pool"]["resourceSliceCount"], 1);
}

// The DRA driver's loop sets the pool from xpud's cards without those pods hold through the
// device plugin (pod-resources), and again from all of them once released.
TEST_F(SharedPool, ACardHeldThroughTheDevicePluginLeavesThePoolUntilReleased) {
  std::vector<std::string> left_out;
  sharing.set_devices(
      without_held_cards(cards(3), HeldCards{.uuids = {"XPU-1"}, .indices = {}}, &left_out));
  sharing.reconcile(now);
  EXPECT_EQ(left_out, (std::vector<std::string>{"xpu1"}));
  auto names = [](const nlohmann::json& slice, const char* field) {
    std::vector<std::string> out;
    for (const auto& entry : slice["spec"][field]) out.push_back(entry["name"]);
    return out;
  };
  auto [devices, counters] = pool();
  EXPECT_EQ(names(devices, "devices"),
            (std::vector<std::string>{"xpu-0", "xpu-2", "xpu-0-shared", "xpu-2-shared"}));
  EXPECT_EQ(names(counters, "sharedCounters"), (std::vector<std::string>{"xpu-0", "xpu-2"}));

  EXPECT_TRUE(sharing.set_devices(without_held_cards(cards(3), {})));
  sharing.reconcile(now);
  std::tie(devices, counters) = pool();
  EXPECT_EQ(devices["spec"]["pool"]["generation"], 2);
  EXPECT_EQ(names(devices, "devices"),
            (std::vector<std::string>{"xpu-0", "xpu-1", "xpu-2", "xpu-0-shared", "xpu-1-shared",
                                      "xpu-2-shared"}));
  EXPECT_EQ(names(counters, "sharedCounters"),
            (std::vector<std::string>{"xpu-0", "xpu-1", "xpu-2"}));
}

}  // namespace
}  // namespace shim::dra
