#include "k8s-shim/dra/kube/device_attribute_json.h"

#include <type_traits>
#include <variant>

#include "k8s-shim/kube/json_fields.h"

namespace shim::dra {

namespace jf = kube::json_fields;
using nlohmann::json;

json device_attribute_json(const AttributeValue& value) {
  return std::visit(
      [](const auto& v) -> json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) return {{"bool", v}};
        if constexpr (std::is_same_v<T, std::int64_t>) return {{"int", v}};
        if constexpr (std::is_same_v<T, std::string>) return {{"string", v}};
        if constexpr (std::is_same_v<T, Version>) return {{"version", v.text}};
      },
      value);
}

AttributeValue device_attribute_from_json(const json& value, const std::string& path) {
  jf::expect_object(value, path);
  // v1 sets exactly one member; more than one means another API than the one we write for.
  int set = 0;
  AttributeValue result;
  if (jf::find(value, path, "bool")) {
    ++set;
    result = jf::bool_or(value, path, "bool", false);
  }
  if (jf::find(value, path, "int")) {
    ++set;
    result = jf::int_or(value, path, "int", 0);
  }
  if (jf::find(value, path, "string")) {
    ++set;
    result = jf::string_or(value, path, "string");
  }
  if (jf::find(value, path, "version")) {
    ++set;
    result = Version{jf::string_or(value, path, "version")};
  }
  if (set != 1) throw jf::FieldError(path + ": expected exactly one of bool, int, string, version");
  return result;
}

}  // namespace shim::dra
