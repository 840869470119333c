#pragma once
// Reading the fields of a Hugging Face config.json, for model_config.cpp and the family records
// (architectures.cpp). Every problem is a std::invalid_argument naming the file, the field and
// the value (printed bounded: a value nested a million levels deep is described, never dumped).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace nsv::detail {

// "a float", "an integer", ... for messages.
std::string json_type_name(const nlohmann::json&);
// A value for a message: scalars as JSON (cut at 40 characters), arrays and objects by their size
// only, so printing never recurses.
std::string shown_value(const nlohmann::json&);

class ConfigReader {
 public:
  ConfigReader(const nlohmann::json& doc, const std::string& source) : doc_(doc), source_(source) {}

  [[noreturn]] void fail(const std::string& what) const;
  const std::string& source() const { return source_; }

  bool present(const char* field) const { return doc_.contains(field) && !doc_.at(field).is_null(); }
  // A positive JSON integer no larger than `max` (required; or `fallback` when absent or null).
  std::int64_t positive(const char* field, std::int64_t max) const;
  std::int64_t positive_or(const char* field, std::int64_t max, std::int64_t fallback) const;
  bool boolean_or(const char* field, bool fallback) const;
  std::string string_or(const char* field, const std::string& fallback) const;
  // A field that must hold `expected` when present (a layout the family record does not cover).
  void require_boolean(const char* field, bool expected, bool fallback, const std::string& why) const;
  // The array field must be absent, null or empty.
  void require_empty_array(const char* field, const std::string& why) const;

 private:
  const nlohmann::json& doc_;
  const std::string& source_;
};

// Limits on a config's sizes, checked before any count uses them. Every count of the audit (a
// matrix's elements x experts x layers, and their NS FLOPs) then fits in 64 bits with room: the
// overflow checks of model_config.cpp and the audit catch what these leave possible.
inline constexpr std::int64_t kMaxDim = std::int64_t{1} << 20;    // 1,048,576
inline constexpr std::int64_t kMaxVocab = std::int64_t{1} << 24;  // 16,777,216
inline constexpr std::int64_t kMaxLayers = 100000;
inline constexpr std::int64_t kMaxExperts = 4096;

}  // namespace nsv::detail
