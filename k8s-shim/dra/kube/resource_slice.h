// resource.k8s.io/v1 ResourceSlice as this driver writes and reads it: typed attributes and
// capacities, JSON out for create/update, JSON in for get/list. Parsing normalises what the API
// server canonicalises (capacities "32Gi" vs 34359738368), so that a listed slice equals the one
// we would write and the publisher can skip unchanged writes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.h"

namespace shim::dra {

// The v1 effects (k8s.io/api resource/v1 DeviceTaintEffect).
namespace taint_effect {
inline constexpr std::string_view kNone = "None";
inline constexpr std::string_view kNoSchedule = "NoSchedule";
inline constexpr std::string_view kNoExecute = "NoExecute";
}  // namespace taint_effect

// A device's taint as the API holds it. time_added is the server's (set on the write that added
// the taint) and not part of what the driver decides, so equality leaves it out.
struct DeviceTaint {
  std::string key;
  std::string value;  // empty: none
  std::string effect;
  std::string time_added;  // RFC 3339 as the API returned it; empty: let the server set it

  bool operator==(const DeviceTaint& other) const {
    return key == other.key && value == other.value && effect == other.effect;
  }
};

// A semantic version attribute ({"version": "5.0.21"}), kept apart from plain strings.
struct Version {
  std::string text;
  bool operator==(const Version&) const = default;
};

// v1 DeviceAttribute: exactly one of {"bool"}, {"int"}, {"string"}, {"version"}.
using AttributeValue = std::variant<bool, std::int64_t, std::string, Version>;

// v1 CapacityRequestPolicy in its validRange form, the one this driver writes: how much of a
// shared device's capacity one allocation takes (KEP-5075, consumable capacity). A request below
// `min` is raised to it, one between steps rounded up to min + n * step, one above `max` refused.
struct CapacityRequestPolicy {
  std::int64_t default_value = 0;  // what a request that names no amount takes
  std::int64_t min = 0;
  std::optional<std::int64_t> max;
  std::optional<std::int64_t> step;

  bool operator==(const CapacityRequestPolicy&) const = default;
};

// v1 DeviceCounterConsumption: what allocating the device takes from a counter set of the pool
// (KEP-4815, partitionable devices).
struct CounterConsumption {
  std::string counter_set;
  std::map<std::string, std::int64_t> counters;  // {"memory": {"value": "34359738368"}}

  bool operator==(const CounterConsumption&) const = default;
};

// v1 CounterSet, in a slice of the pool that holds no devices.
struct CounterSet {
  std::string name;
  std::map<std::string, std::int64_t> counters;

  bool operator==(const CounterSet&) const = default;
};

struct SliceDevice {
  std::string name;  // a DNS label: device_name(index)
  // Unqualified names are in the driver's domain; Kubernetes' standard ones are fully qualified
  // ("resource.kubernetes.io/pcieRoot"). Written and read as given.
  std::map<std::string, AttributeValue> attributes;
  std::map<std::string, std::int64_t> capacity;  // {"memory": {"value": "34359738368"}}
  // capacity[name].requestPolicy, for the capacities that have one.
  std::map<std::string, CapacityRequestPolicy> request_policies{};
  std::vector<DeviceTaint> taints;  // an unhealthy card's (slices/device_taints.h)
  bool allow_multiple_allocations = false;
  std::vector<CounterConsumption> consumes_counters{};

  bool operator==(const SliceDevice&) const = default;
};

struct SlicePool {
  std::string name;
  std::int64_t generation = 0;
  std::int64_t resource_slice_count = 1;

  bool operator==(const SlicePool&) const = default;
};

struct ResourceSliceSpec {
  std::string driver;
  std::string node_name;
  SlicePool pool;
  std::vector<SliceDevice> devices;  // order matters: the API keeps it, we write by index
  // Only in a slice without devices: the API takes one or the other.
  std::vector<CounterSet> shared_counters{};

  bool operator==(const ResourceSliceSpec&) const = default;
};

struct ResourceSlice {
  std::string name;              // metadata.name, empty before create
  std::string generate_name;     // for create; empty: "<node>-xpu.kunlunxin.com-"
  std::string resource_version;  // required by update
  std::string uid;
  ResourceSliceSpec spec;
};

// The generateName this driver creates its slices with: "<node>-xpu.kunlunxin.com-".
std::string slice_generate_name(std::string_view node_name);

// The object to POST (no name: metadata.generateName) or PUT (metadata.name and
// metadata.resourceVersion).
std::string resource_slice_to_json(const ResourceSlice& slice);

// A single ResourceSlice, and the items of a ResourceSliceList. Unknown fields are ignored; a
// known field of the wrong type, an attribute with no known value type, a capacity that is not
// a whole-number Quantity or a taint without key or effect is an error naming the field path.
// Never throw.
xpu::Result<ResourceSlice> parse_resource_slice(std::string_view json);
xpu::Result<std::vector<ResourceSlice>> parse_resource_slice_list(std::string_view json);

}  // namespace shim::dra
