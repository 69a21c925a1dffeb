#include "k8s-shim/dra/kube/resource_slice.h"

#include "k8s-shim/dra/dra_names.h"
#include "k8s-shim/dra/kube/device_attribute_json.h"
#include "k8s-shim/dra/kube/quantity.h"
#include "k8s-shim/kube/json_fields.h"

namespace shim::dra {

namespace jf = kube::json_fields;
using nlohmann::json;

namespace {

constexpr std::string_view kApiVersion = "resource.k8s.io/v1";

// A Quantity: a string on the wire; a bare number is tolerated as the API does.
std::int64_t quantity_from_json(const json& raw, const std::string& path) {
  xpu::Result<std::int64_t> parsed = std::int64_t{0};
  if (raw.is_string())
    parsed = parse_quantity(raw.get<std::string>());
  else if (raw.is_number_unsigned() &&
           raw.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
    throw jf::FieldError(path + ": integer out of range");
  else if (raw.is_number_integer())
    parsed = raw.get<std::int64_t>();
  else
    throw jf::FieldError(path + ": expected a quantity string, got " + raw.type_name());
  if (!parsed) throw jf::FieldError(path + ": " + parsed.error());
  return *parsed;
}

// {"<name>": {"value": <quantity>}, ...}: capacities and counters alike.
std::map<std::string, std::int64_t> values_from_json(const json& value, const std::string& path) {
  jf::expect_object(value, path);
  std::map<std::string, std::int64_t> values;
  for (const auto& [key, entry] : value.items()) {
    std::string entry_path = jf::child(path, key);
    jf::expect_object(entry, entry_path);
    const json* raw = jf::find(entry, entry_path, "value");
    if (!raw) throw jf::FieldError(jf::child(entry_path, "value") + ": missing");
    values[key] = quantity_from_json(*raw, jf::child(entry_path, "value"));
  }
  return values;
}

json values_to_json(const std::map<std::string, std::int64_t>& values) {
  json out = json::object();
  for (const auto& [key, value] : values) out[key] = {{"value", format_quantity(value)}};
  return out;
}

CapacityRequestPolicy request_policy_from_json(const json& value, const std::string& path) {
  jf::expect_object(value, path);
  CapacityRequestPolicy policy;
  if (const json* fallback = jf::find(value, path, "default"))
    policy.default_value = quantity_from_json(*fallback, jf::child(path, "default"));
  if (jf::find(value, path, "validValues"))
    throw jf::FieldError(jf::child(path, "validValues") + ": this driver writes validRange only");
  if (const json* range = jf::find(value, path, "validRange")) {
    std::string range_path = jf::child(path, "validRange");
    jf::expect_object(*range, range_path);
    if (const json* min = jf::find(*range, range_path, "min"))
      policy.min = quantity_from_json(*min, jf::child(range_path, "min"));
    if (const json* max = jf::find(*range, range_path, "max"))
      policy.max = quantity_from_json(*max, jf::child(range_path, "max"));
    if (const json* step = jf::find(*range, range_path, "step"))
      policy.step = quantity_from_json(*step, jf::child(range_path, "step"));
  }
  return policy;
}

json request_policy_to_json(const CapacityRequestPolicy& policy) {
  json range = {{"min", format_quantity(policy.min)}};
  if (policy.max) range["max"] = format_quantity(*policy.max);
  if (policy.step) range["step"] = format_quantity(*policy.step);
  return {{"default", format_quantity(policy.default_value)}, {"validRange", std::move(range)}};
}

SliceDevice device_from_json(const json& value, const std::string& path) {
  jf::expect_object(value, path);
  SliceDevice device;
  device.name = jf::string_or(value, path, "name");
  if (const auto* attributes = jf::find(value, path, "attributes")) {
    std::string attributes_path = jf::child(path, "attributes");
    jf::expect_object(*attributes, attributes_path);
    for (const auto& [key, attribute] : attributes->items())
      device.attributes[key] =
          device_attribute_from_json(attribute, jf::child(attributes_path, key));
  }
  if (const auto* capacity = jf::find(value, path, "capacity")) {
    std::string capacity_path = jf::child(path, "capacity");
    device.capacity = values_from_json(*capacity, capacity_path);
    for (const auto& [key, entry] : capacity->items()) {
      std::string entry_path = jf::child(capacity_path, key);
      if (const json* policy = jf::find(entry, entry_path, "requestPolicy"))
        device.request_policies[key] =
            request_policy_from_json(*policy, jf::child(entry_path, "requestPolicy"));
    }
  }
  device.allow_multiple_allocations = jf::bool_or(value, path, "allowMultipleAllocations", false);
  if (const auto* consumes = jf::find(value, path, "consumesCounters")) {
    std::string consumes_path = jf::child(path, "consumesCounters");
    jf::expect_array(*consumes, consumes_path);
    for (std::size_t i = 0; i < consumes->size(); ++i) {
      std::string entry_path = jf::element(consumes_path, i);
      const json& entry = jf::expect_object((*consumes)[i], entry_path);
      CounterConsumption consumption{.counter_set = jf::string_or(entry, entry_path, "counterSet"),
                                     .counters = {}};
      if (const json* counters = jf::find(entry, entry_path, "counters"))
        consumption.counters = values_from_json(*counters, jf::child(entry_path, "counters"));
      device.consumes_counters.push_back(std::move(consumption));
    }
  }
  if (const auto* taints = jf::find(value, path, "taints")) {
    std::string taints_path = jf::child(path, "taints");
    jf::expect_array(*taints, taints_path);
    for (std::size_t i = 0; i < taints->size(); ++i) {
      std::string taint_path = jf::element(taints_path, i);
      const json& entry = jf::expect_object((*taints)[i], taint_path);
      DeviceTaint taint{.key = jf::string_or(entry, taint_path, "key"),
                        .value = jf::string_or(entry, taint_path, "value"),
                        .effect = jf::string_or(entry, taint_path, "effect"),
                        .time_added = jf::string_or(entry, taint_path, "timeAdded")};
      if (taint.key.empty()) throw jf::FieldError(jf::child(taint_path, "key") + ": missing");
      if (taint.effect.empty()) throw jf::FieldError(jf::child(taint_path, "effect") + ": missing");
      device.taints.push_back(std::move(taint));
    }
  }
  return device;
}

ResourceSlice slice_from_json(const json& root, const std::string& path) {
  jf::expect_object(root, path);
  ResourceSlice slice;
  if (const auto* metadata = jf::find(root, path, "metadata")) {
    std::string metadata_path = jf::child(path, "metadata");
    jf::expect_object(*metadata, metadata_path);
    slice.name = jf::string_or(*metadata, metadata_path, "name");
    slice.generate_name = jf::string_or(*metadata, metadata_path, "generateName");
    slice.resource_version = jf::string_or(*metadata, metadata_path, "resourceVersion");
    slice.uid = jf::string_or(*metadata, metadata_path, "uid");
  }
  const auto* spec = jf::find(root, path, "spec");
  if (!spec) return slice;
  std::string spec_path = jf::child(path, "spec");
  jf::expect_object(*spec, spec_path);
  slice.spec.driver = jf::string_or(*spec, spec_path, "driver");
  slice.spec.node_name = jf::string_or(*spec, spec_path, "nodeName");
  if (const auto* pool = jf::find(*spec, spec_path, "pool")) {
    std::string pool_path = jf::child(spec_path, "pool");
    jf::expect_object(*pool, pool_path);
    slice.spec.pool.name = jf::string_or(*pool, pool_path, "name");
    slice.spec.pool.generation = jf::int_or(*pool, pool_path, "generation", 0);
    slice.spec.pool.resource_slice_count = jf::int_or(*pool, pool_path, "resourceSliceCount", 0);
  }
  if (const auto* devices = jf::find(*spec, spec_path, "devices")) {
    std::string devices_path = jf::child(spec_path, "devices");
    jf::expect_array(*devices, devices_path);
    for (std::size_t i = 0; i < devices->size(); ++i)
      slice.spec.devices.push_back(device_from_json((*devices)[i], jf::element(devices_path, i)));
  }
  if (const auto* sets = jf::find(*spec, spec_path, "sharedCounters")) {
    std::string sets_path = jf::child(spec_path, "sharedCounters");
    jf::expect_array(*sets, sets_path);
    for (std::size_t i = 0; i < sets->size(); ++i) {
      std::string set_path = jf::element(sets_path, i);
      const json& entry = jf::expect_object((*sets)[i], set_path);
      CounterSet set{.name = jf::string_or(entry, set_path, "name"), .counters = {}};
      if (const json* counters = jf::find(entry, set_path, "counters"))
        set.counters = values_from_json(*counters, jf::child(set_path, "counters"));
      slice.spec.shared_counters.push_back(std::move(set));
    }
  }
  return slice;
}

void expect_kind(const json& root, std::string_view path, std::string_view wanted) {
  std::string kind = jf::string_or(root, path, "kind");
  if (!kind.empty() && kind != wanted)
    throw jf::FieldError("expected kind " + std::string(wanted) + ", got \"" + kind + "\"");
}

}  // namespace

std::string slice_generate_name(std::string_view node_name) {
  return std::string(node_name) + "-" + std::string(kDriverName) + "-";
}

std::string resource_slice_to_json(const ResourceSlice& slice) {
  json metadata = json::object();
  if (slice.name.empty()) {
    metadata["generateName"] = slice.generate_name.empty()
                                   ? slice_generate_name(slice.spec.node_name)
                                   : slice.generate_name;
  } else {
    metadata["name"] = slice.name;
  }
  if (!slice.resource_version.empty()) metadata["resourceVersion"] = slice.resource_version;
  if (!slice.uid.empty()) metadata["uid"] = slice.uid;

  json devices = json::array();
  for (const SliceDevice& device : slice.spec.devices) {
    json entry = {{"name", device.name}};
    if (!device.attributes.empty()) {
      json attributes = json::object();
      for (const auto& [key, value] : device.attributes)
        attributes[key] = device_attribute_json(value);
      entry["attributes"] = std::move(attributes);
    }
    if (!device.capacity.empty()) {
      json capacity = values_to_json(device.capacity);
      for (const auto& [key, policy] : device.request_policies)
        if (capacity.contains(key)) capacity[key]["requestPolicy"] = request_policy_to_json(policy);
      entry["capacity"] = std::move(capacity);
    }
    if (device.allow_multiple_allocations) entry["allowMultipleAllocations"] = true;
    if (!device.consumes_counters.empty()) {
      json consumes = json::array();
      for (const CounterConsumption& consumption : device.consumes_counters)
        consumes.push_back({{"counterSet", consumption.counter_set},
                            {"counters", values_to_json(consumption.counters)}});
      entry["consumesCounters"] = std::move(consumes);
    }
    if (!device.taints.empty()) {
      json taints = json::array();
      for (const DeviceTaint& taint : device.taints) {
        json item = {{"key", taint.key}, {"effect", taint.effect}};
        if (!taint.value.empty()) item["value"] = taint.value;
        if (!taint.time_added.empty()) item["timeAdded"] = taint.time_added;
        taints.push_back(std::move(item));
      }
      entry["taints"] = std::move(taints);
    }
    devices.push_back(std::move(entry));
  }

  json spec = {
      {"driver", slice.spec.driver},
      {"nodeName", slice.spec.node_name},
      {"pool",
       {{"name", slice.spec.pool.name},
        {"generation", slice.spec.pool.generation},
        {"resourceSliceCount", slice.spec.pool.resource_slice_count}}},
  };
  // The API takes devices or sharedCounters in a slice, not both.
  if (slice.spec.shared_counters.empty()) {
    spec["devices"] = std::move(devices);
  } else {
    json sets = json::array();
    for (const CounterSet& set : slice.spec.shared_counters)
      sets.push_back({{"name", set.name}, {"counters", values_to_json(set.counters)}});
    spec["sharedCounters"] = std::move(sets);
  }
  json root = {{"apiVersion", kApiVersion},
               {"kind", "ResourceSlice"},
               {"metadata", std::move(metadata)},
               {"spec", std::move(spec)}};
  return root.dump();
}

xpu::Result<ResourceSlice> parse_resource_slice(std::string_view text) {
  try {
    json root = jf::parse_document(text);
    jf::expect_object(root, "(document)");
    expect_kind(root, "", "ResourceSlice");
    return slice_from_json(root, "");
  } catch (const jf::FieldError& error) {
    return xpu::Error{std::string("ResourceSlice: ") + error.what()};
  } catch (const json::exception& error) {
    return xpu::Error{std::string("ResourceSlice: ") + error.what()};
  }
}

xpu::Result<std::vector<ResourceSlice>> parse_resource_slice_list(std::string_view text) {
  try {
    json root = jf::parse_document(text);
    jf::expect_object(root, "(document)");
    expect_kind(root, "", "ResourceSliceList");
    std::vector<ResourceSlice> slices;
    const json* items = jf::find(root, "", "items");
    if (!items) return slices;  // an empty list may come without items
    jf::expect_array(*items, "items");
    for (std::size_t i = 0; i < items->size(); ++i)
      slices.push_back(slice_from_json((*items)[i], jf::element("items", i)));
    return slices;
  } catch (const jf::FieldError& error) {
    return xpu::Error{std::string("ResourceSliceList: ") + error.what()};
  } catch (const json::exception& error) {
    return xpu::Error{std::string("ResourceSliceList: ") + error.what()};
  }
}

}  // namespace shim::dra
