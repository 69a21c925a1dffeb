#include "k8s-shim/dra/kube/resource_slice.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/k8s-shim/dra/kube/replay_transport.h"

namespace shim::dra {
namespace {

using testing::recorded;

// What request_resourceslice_create.json asked for, typed.
ResourceSliceSpec recorded_spec(std::int64_t generation) {
  SliceDevice xpu0{.name = "xpu-0",
                   .attributes = {{"model", std::string("P800")},
                                  {"uuid", std::string("XPU-0000-1111")},
                                  {"index", std::int64_t{0}},
                                  {"numaNode", std::int64_t{0}},
                                  {"pciBusId", std::string("0000:3b:00.0")},
                                  {"driverVersion", Version{"5.0.21"}},
                                  {"healthy", true},
                                  {"linkGroup", std::int64_t{0}}},
                   .capacity = {{"memory", 34359738368}},
                   .taints = {}};
  SliceDevice xpu1{.name = "xpu-1",
                   .attributes = {{"model", std::string("P800")},
                                  {"uuid", std::string("XPU-0000-2222")},
                                  {"index", std::int64_t{1}},
                                  {"pciBusId", std::string("0000:3c:00.0")},
                                  {"driverVersion", Version{"5.0.21"}},
                                  {"healthy", false},
                                  {"linkGroup", std::int64_t{0}}},
                   .capacity = {{"memory", 1500000000}},
                   .taints = {}};
  return ResourceSliceSpec{
      .driver = "xpu.kunlunxin.com",
      .node_name = "node-a",
      .pool = {.name = "node-a", .generation = generation, .resource_slice_count = 1},
      .devices = {xpu0, xpu1}};
}

TEST(ResourceSlice, ReadsTheCreatedObjectAsWritten) {
  auto slice = parse_resource_slice(recorded("resourceslice_create.json"));
  ASSERT_TRUE(slice) << slice.error();
  EXPECT_EQ(slice->name, "node-a-xpu.kunlunxin.com-xdh7m");
  EXPECT_EQ(slice->generate_name, "node-a-xpu.kunlunxin.com-");
  EXPECT_EQ(slice->resource_version, "203");
  EXPECT_EQ(slice->uid, "c9d5c6c5-7885-4d72-ab5b-63559243994e");
  // The server answered "1500M" for the "1500000000" we sent: still equal.
  EXPECT_EQ(slice->spec, recorded_spec(1));
}

TEST(ResourceSlice, ReadsLists) {
  auto empty = parse_resource_slice_list(recorded("resourceslice_list_empty.json"));
  ASSERT_TRUE(empty) << empty.error();
  EXPECT_TRUE(empty->empty());
  auto one = parse_resource_slice_list(recorded("resourceslice_list_one.json"));
  ASSERT_TRUE(one) << one.error();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ(one->front().spec, recorded_spec(1));
  EXPECT_EQ(one->front().resource_version, "203");
}

TEST(ResourceSlice, ReadsBinaryCapacities) {
  auto updated = parse_resource_slice(recorded("resourceslice_update.json"));
  ASSERT_TRUE(updated) << updated.error();
  EXPECT_EQ(updated->spec.pool.generation, 2);
  EXPECT_EQ(updated->spec.devices.at(1).capacity.at("memory"), 34359738368);  // "32Gi"
  EXPECT_EQ(updated->spec.devices.at(1).attributes.at("healthy"), AttributeValue(true));
}

TEST(ResourceSlice, WritesWhatItReads) {
  ResourceSlice slice;
  slice.spec = recorded_spec(1);
  auto json = nlohmann::json::parse(resource_slice_to_json(slice));
  EXPECT_EQ(json["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ(json["kind"], "ResourceSlice");
  EXPECT_EQ(json["metadata"]["generateName"], "node-a-xpu.kunlunxin.com-");
  EXPECT_FALSE(json["metadata"].contains("name"));
  EXPECT_EQ(json["spec"],
            nlohmann::json::parse(recorded("request_resourceslice_create.json"))["spec"]);

  auto back = parse_resource_slice(resource_slice_to_json(slice));
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->spec, slice.spec);

  slice.name = "node-a-xpu.kunlunxin.com-xdh7m";
  slice.resource_version = "203";
  json = nlohmann::json::parse(resource_slice_to_json(slice));
  EXPECT_EQ(json["metadata"]["name"], "node-a-xpu.kunlunxin.com-xdh7m");
  EXPECT_EQ(json["metadata"]["resourceVersion"], "203");
  EXPECT_FALSE(json["metadata"].contains("generateName"));
}

TEST(ResourceSlice, TaintsRoundTripAndTheServersTimeIsKeptButNotCompared) {
  ResourceSlice slice;
  slice.spec = recorded_spec(3);
  slice.spec.devices[1].taints = {DeviceTaint{.key = "xpu.kunlunxin.com/driver_fault",
                                              .value = "device-lost",
                                              .effect = "NoExecute",
                                              .time_added = {}}};
  auto json = nlohmann::json::parse(resource_slice_to_json(slice));
  EXPECT_EQ(json["spec"]["devices"][1]["taints"],
            nlohmann::json::parse(R"([{"key":"xpu.kunlunxin.com/driver_fault",
                                       "value":"device-lost","effect":"NoExecute"}])"));
  EXPECT_FALSE(json["spec"]["devices"][0].contains("taints"));

  json["spec"]["devices"][1]["taints"][0]["timeAdded"] = "2026-12-04T10:00:00Z";
  auto back = parse_resource_slice(json.dump());
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->spec, slice.spec);  // the time is the server's, not part of the decision
  EXPECT_EQ(back->spec.devices[1].taints.at(0).time_added, "2026-12-04T10:00:00Z");
  EXPECT_EQ(nlohmann::json::parse(
                resource_slice_to_json(*back))["spec"]["devices"][1]["taints"][0]["timeAdded"],
            "2026-12-04T10:00:00Z");

  back->spec.devices[1].taints[0].effect = "NoSchedule";
  EXPECT_NE(back->spec, slice.spec);
}

TEST(ResourceSlice, ReadsTheTaintTheServerStampedAndSeesAnOlderServerDropIt) {
  auto stamped = parse_resource_slice(recorded("resourceslice_update_tainted.json"));  // 1.37
  ASSERT_TRUE(stamped) << stamped.error();
  ResourceSliceSpec expected = recorded_spec(2);
  expected.devices[1].taints = {DeviceTaint{.key = "xpu.kunlunxin.com/driver_fault",
                                            .value = "device-lost",
                                            .effect = "NoExecute",
                                            .time_added = {}}};
  EXPECT_EQ(stamped->spec, expected);
  EXPECT_FALSE(stamped->spec.devices[1].taints.at(0).time_added.empty());
  EXPECT_TRUE(stamped->spec.devices[0].taints.empty());

  auto dropped = parse_resource_slice(recorded("resourceslice_update_tainted_v1.35.json"));
  ASSERT_TRUE(dropped) << dropped.error();
  EXPECT_EQ(dropped->spec.pool.generation, 2);
  EXPECT_TRUE(dropped->spec.devices[1].taints.empty());
}

// Sharing (consumable capacity and partitionable devices): a card whole and its shareable form
// take the same counter, and the counters sit in a slice of their own, which has no devices.
TEST(ResourceSlice, SharedCountersAndConsumableCapacityRoundTrip) {
  constexpr std::int64_t kCard = 34359738368;
  constexpr std::int64_t kGiB = 1073741824;
  ResourceSlice devices;
  devices.spec = recorded_spec(4);
  devices.spec.pool.resource_slice_count = 2;
  devices.spec.devices.resize(1);
  devices.spec.devices[0].consumes_counters = {
      CounterConsumption{.counter_set = "xpu-0", .counters = {{"memory", kCard}}}};
  SliceDevice shared = devices.spec.devices[0];
  shared.name = "xpu-0-shared";
  shared.allow_multiple_allocations = true;
  shared.request_policies = {
      {"memory", CapacityRequestPolicy{
                     .default_value = kGiB, .min = kGiB, .max = std::nullopt, .step = kGiB}}};
  devices.spec.devices.push_back(shared);

  auto json = nlohmann::json::parse(resource_slice_to_json(devices));
  const auto& written = json["spec"]["devices"][1];
  EXPECT_EQ(written["allowMultipleAllocations"], true);
  EXPECT_EQ(written["capacity"]["memory"], nlohmann::json::parse(R"({"value":"34359738368",
      "requestPolicy":{"default":"1073741824",
                       "validRange":{"min":"1073741824","step":"1073741824"}}})"));
  EXPECT_EQ(written["consumesCounters"], nlohmann::json::parse(R"([{"counterSet":"xpu-0",
                                       "counters":{"memory":{"value":"34359738368"}}}])"));
  EXPECT_FALSE(json["spec"]["devices"][0].contains("allowMultipleAllocations"));
  EXPECT_FALSE(json["spec"].contains("sharedCounters"));
  auto back = parse_resource_slice(json.dump());
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->spec, devices.spec);

  ResourceSlice counters;
  counters.spec = recorded_spec(4);
  counters.spec.pool.resource_slice_count = 2;
  counters.spec.devices.clear();
  counters.spec.shared_counters = {CounterSet{.name = "xpu-0", .counters = {{"memory", kCard}}}};
  json = nlohmann::json::parse(resource_slice_to_json(counters));
  EXPECT_FALSE(json["spec"].contains("devices"));
  EXPECT_EQ(
      json["spec"]["sharedCounters"],
      nlohmann::json::parse(R"([{"name":"xpu-0","counters":{"memory":{"value":"34359738368"}}}])"));
  back = parse_resource_slice(json.dump());
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->spec, counters.spec);
}

TEST(ResourceSlice, NamesFieldsOfTheWrongType) {
  auto check = [](std::string_view json, std::string_view path) {
    auto slice = parse_resource_slice(json);
    ASSERT_FALSE(slice) << json;
    EXPECT_NE(slice.error().find(path), std::string::npos) << slice.error();
  };
  check(R"({"spec":{"pool":{"generation":"1"}}})", "spec.pool.generation");
  check(R"({"spec":{"devices":[{"name":"a","attributes":{"x":{"int":"1"}}}]}})",
        "spec.devices[0].attributes.x.int");
  check(R"({"spec":{"devices":[{"name":"a","attributes":{"x":{}}}]}})",
        "spec.devices[0].attributes.x");
  check(R"({"spec":{"devices":[{"name":"a","capacity":{"memory":{"value":"1.5"}}}]}})",
        "spec.devices[0].capacity.memory.value");
  check(R"({"spec":{"devices":[{"name":"a","capacity":{"memory":{"value":true}}}]}})",
        "spec.devices[0].capacity.memory.value");
  check(R"({"spec":{"devices":{}}})", "spec.devices");
  check(R"({"spec":{"sharedCounters":[{"name":"a","counters":{"m":{"value":"x"}}}]}})",
        "spec.sharedCounters[0].counters.m.value");
  check(R"({"spec":{"devices":[{"name":"a","consumesCounters":[{"counters":[]}]}]}})",
        "spec.devices[0].consumesCounters[0].counters");
  check(R"({"spec":{"devices":[{"name":"a","capacity":{"m":{"value":"1",)"
        R"("requestPolicy":{"validRange":{"min":false}}}}}]}})",
        "spec.devices[0].capacity.m.requestPolicy.validRange.min");
  check(R"({"spec":{"devices":[{"name":"a","capacity":{"m":{"value":"1",)"
        R"("requestPolicy":{"validValues":["1"]}}}}]}})",
        "spec.devices[0].capacity.m.requestPolicy.validValues");
  check(R"({"spec":{"devices":[{"name":"a","taints":{}}]}})", "spec.devices[0].taints");
  check(R"({"spec":{"devices":[{"name":"a","taints":[{"effect":"NoSchedule"}]}]}})",
        "spec.devices[0].taints[0].key");
  check(R"({"spec":{"devices":[{"name":"a","taints":[{"key":"k"}]}]}})",
        "spec.devices[0].taints[0].effect");
  check(R"({"spec":{"devices":[{"name":"a","taints":[{"key":"k","effect":1}]}]}})",
        "spec.devices[0].taints[0].effect");
  auto list = parse_resource_slice_list(R"({"items":[{},{"spec":{"nodeName":1}}]})");
  ASSERT_FALSE(list);
  EXPECT_NE(list.error().find("items[1].spec.nodeName"), std::string::npos) << list.error();
}

TEST(ResourceSlice, RefusesGarbageAndOtherKinds) {
  EXPECT_FALSE(parse_resource_slice(""));
  EXPECT_FALSE(parse_resource_slice("not json"));
  EXPECT_FALSE(parse_resource_slice(recorded("resourceslice_update_conflict.json")));
  EXPECT_FALSE(parse_resource_slice_list(recorded("resourceslice_create.json")));
  EXPECT_FALSE(parse_resource_slice_list(R"({"items":5})"));
  EXPECT_FALSE(parse_resource_slice(R"({"spec":{"pool":{"generation":18446744073709551615}}})"));
}

}  // namespace
}  // namespace shim::dra
