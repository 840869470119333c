#include "config_reader.hpp"

#include <stdexcept>

namespace nsv::detail {

using nlohmann::json;

std::string json_type_name(const json& v) {
  if (v.is_number_float()) return "a float";
  if (v.is_number_integer()) return "an integer";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  if (v.is_null()) return "null";
  return v.type_name();
}

std::string shown_value(const json& v) {
  if (v.is_array()) return "[...] (" + std::to_string(v.size()) + " elements)";
  if (v.is_object()) return "{...} (" + std::to_string(v.size()) + " keys)";
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);  // a scalar: no recursion
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

void ConfigReader::fail(const std::string& what) const { throw std::invalid_argument(source_ + ": " + what); }

std::int64_t ConfigReader::positive(const char* field, std::int64_t max) const {
  if (!doc_.contains(field)) fail(std::string("required field \"") + field + "\" is missing");
  const json& v = doc_.at(field);
  const std::string f = std::string("field \"") + field + "\"";
  if (!v.is_number_integer()) fail(f + " must be a positive integer, got " + json_type_name(v) + " " + shown_value(v));
  const bool too_large = v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(max) : v.get<std::int64_t>() > max;
  if (too_large) fail(f + " = " + shown_value(v) + " is implausibly large (limit " + std::to_string(max) + ")");
  const auto x = v.get<std::int64_t>();
  if (x < 1) fail(f + " must be a positive integer, got " + shown_value(v));
  return x;
}

std::int64_t ConfigReader::positive_or(const char* field, std::int64_t max, std::int64_t fallback) const {
  return present(field) ? positive(field, max) : fallback;
}

bool ConfigReader::boolean_or(const char* field, bool fallback) const {
  if (!present(field)) return fallback;
  const json& v = doc_.at(field);
  if (!v.is_boolean())
    fail(std::string("field \"") + field + "\" must be true or false, got " + json_type_name(v) + " " + shown_value(v));
  return v.get<bool>();
}

std::string ConfigReader::string_or(const char* field, const std::string& fallback) const {
  if (!present(field)) return fallback;
  const json& v = doc_.at(field);
  if (!v.is_string()) fail(std::string("field \"") + field + "\" must be a string, got " + json_type_name(v) + " " + shown_value(v));
  return v.get<std::string>();
}

void ConfigReader::require_boolean(const char* field, bool expected, bool fallback, const std::string& why) const {
  if (boolean_or(field, fallback) != expected)
    fail(std::string("field \"") + field + "\" = " + (expected ? "false" : "true") + " is not supported: " + why);
}

void ConfigReader::require_empty_array(const char* field, const std::string& why) const {
  if (!present(field)) return;
  const json& v = doc_.at(field);
  if (!v.is_array()) fail(std::string("field \"") + field + "\" must be an array, got " + json_type_name(v) + " " + shown_value(v));
  if (!v.empty()) fail(std::string("field \"") + field + "\" = " + shown_value(v) + " is not supported: " + why);
}

}  // namespace nsv::detail
