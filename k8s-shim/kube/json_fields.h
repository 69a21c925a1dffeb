// Typed reads of API objects that name the offending field ("spec.devices[2].name: expected a
// string, got number"). Internal to the parsers: the reads throw FieldError, and each parse_*
// function catches it (and nlohmann's exceptions) at its boundary and returns an error.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace shim::kube::json_fields {

class FieldError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A field path, built as the reader descends: "status.allocation.devices.results[0]".
std::string child(std::string_view path, std::string_view key);
std::string element(std::string_view path, std::size_t index);

// The member `key` of `object` (which must be an object) or nullptr when absent or null: the API
// leaves out empty fields, so absence is the normal way to say "none".
const nlohmann::json* find(const nlohmann::json& object, std::string_view path,
                           std::string_view key);

// The object at `path` itself; a FieldError names the path when it is another type.
const nlohmann::json& expect_object(const nlohmann::json& value, std::string_view path);
const nlohmann::json& expect_array(const nlohmann::json& value, std::string_view path);

// Optional members: `fallback` when absent, FieldError on another type.
std::string string_or(const nlohmann::json& object, std::string_view path, std::string_view key,
                      std::string fallback = {});
std::int64_t int_or(const nlohmann::json& object, std::string_view path, std::string_view key,
                    std::int64_t fallback);
bool bool_or(const nlohmann::json& object, std::string_view path, std::string_view key,
             bool fallback);

// Parses a whole document; a FieldError on syntax errors (with nlohmann's position).
nlohmann::json parse_document(std::string_view text);

}  // namespace shim::kube::json_fields
