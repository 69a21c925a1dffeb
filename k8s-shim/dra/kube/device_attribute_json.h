// A v1 DeviceAttribute on the wire ({"int": 3}, {"version": "5.0.21"}): how the slices carry a
// device's attributes, and so how every file of ours that carries them spells them too (the
// prepared claims' checkpoint, the device metadata file).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "k8s-shim/dra/kube/resource_slice.h"

namespace shim::dra {

nlohmann::json device_attribute_json(const AttributeValue& value);

// Exactly one of bool, int, string, version, of its JSON type. Throws kube::json_fields::FieldError
// naming `path` otherwise (for parsers, which catch it at their boundary: json_fields.h).
AttributeValue device_attribute_from_json(const nlohmann::json& value, const std::string& path);

}  // namespace shim::dra
