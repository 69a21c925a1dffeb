#include "k8s-shim/kube/json_fields.h"

namespace shim::kube::json_fields {

namespace {

std::string describe_mismatch(std::string_view path, std::string_view expected,
                              const nlohmann::json& value) {
  return std::string(path) + ": expected " + std::string(expected) + ", got " + value.type_name();
}

}  // namespace

std::string child(std::string_view path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return std::string(path) + "." + std::string(key);
}

std::string element(std::string_view path, std::size_t index) {
  return std::string(path) + "[" + std::to_string(index) + "]";
}

const nlohmann::json& expect_object(const nlohmann::json& value, std::string_view path) {
  if (!value.is_object()) throw FieldError(describe_mismatch(path, "an object", value));
  return value;
}

const nlohmann::json& expect_array(const nlohmann::json& value, std::string_view path) {
  if (!value.is_array()) throw FieldError(describe_mismatch(path, "an array", value));
  return value;
}

const nlohmann::json* find(const nlohmann::json& object, std::string_view path,
                           std::string_view key) {
  expect_object(object, path);
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string string_or(const nlohmann::json& object, std::string_view path, std::string_view key,
                      std::string fallback) {
  const nlohmann::json* value = find(object, path, key);
  if (!value) return fallback;
  if (!value->is_string())
    throw FieldError(describe_mismatch(child(path, key), "a string", *value));
  return value->get<std::string>();
}

std::int64_t int_or(const nlohmann::json& object, std::string_view path, std::string_view key,
                    std::int64_t fallback) {
  const nlohmann::json* value = find(object, path, key);
  if (!value) return fallback;
  // An unsigned above INT64_MAX is stored as number_unsigned; reading it as int64 would wrap.
  if (value->is_number_unsigned() &&
      value->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
    throw FieldError(child(path, key) + ": integer out of range");
  if (!value->is_number_integer())
    throw FieldError(describe_mismatch(child(path, key), "an integer", *value));
  return value->get<std::int64_t>();
}

bool bool_or(const nlohmann::json& object, std::string_view path, std::string_view key,
             bool fallback) {
  const nlohmann::json* value = find(object, path, key);
  if (!value) return fallback;
  if (!value->is_boolean())
    throw FieldError(describe_mismatch(child(path, key), "a boolean", *value));
  return value->get<bool>();
}

nlohmann::json parse_document(std::string_view text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& error) {
    throw FieldError(std::string("not JSON: ") + error.what());
  }
}

}  // namespace shim::kube::json_fields
