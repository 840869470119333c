#include "nsv/engine/grads_description.hpp"

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace nsv::engine {
namespace {

// Dimensions above this are not a model this tool can hold (a 2^20-wide matrix alone is 8 TiB).
constexpr std::int64_t kMaxDimension = std::int64_t{1} << 20;

[[noreturn]] void refuse(const std::string& source, const std::string& field, const std::string& why) {
  throw std::invalid_argument(source + ": \"model\"." + field + " " + why);
}

// What a JSON value is, briefly (a deeply nested or long value is never printed whole).
std::string brief(const nlohmann::json& v) {
  if (v.is_structured()) return std::string("a JSON ") + v.type_name();
  std::string text = v.dump();
  return text.size() > 40 ? text.substr(0, 40) + "..." : text;
}

std::int64_t dimension(const nlohmann::json& model, const char* field, std::int64_t fallback, const std::string& source) {
  const auto it = model.find(field);
  if (it == model.end()) return fallback;
  if (!it->is_number_integer()) refuse(source, field, "must be a positive integer, got " + brief(*it));
  const auto v = it->is_number_unsigned() ? static_cast<std::int64_t>(std::min<std::uint64_t>(it->get<std::uint64_t>(), kMaxDimension + 1))
                                          : it->get<std::int64_t>();
  if (v < 1 || v > kMaxDimension)
    refuse(source, field, "must be between 1 and " + std::to_string(kMaxDimension) + ", got " + brief(*it));
  return v;
}

}  // namespace

GradsDescription parse_grads_description(const std::string& text, const std::string& source, const ModelDims& defaults) {
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw std::invalid_argument(source + " is not valid JSON");
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object())
    throw std::invalid_argument(source + " has no \"model\" object (tools/make_grads.py writes one)");
  const auto& m = j["model"];
  GradsDescription d;
  ModelDims& dims = d.dims;
  dims = defaults;
  dims.name = "grads.json";
  dims.hidden = dimension(m, "hidden_size", defaults.hidden, source);
  dims.heads = dimension(m, "num_attention_heads", defaults.heads, source);
  dims.kv_heads = dimension(m, "num_key_value_heads", dims.heads, source);
  if (dims.heads % dims.kv_heads != 0)
    refuse(source, "num_key_value_heads", std::to_string(dims.kv_heads) + " must divide num_attention_heads " + std::to_string(dims.heads));
  const std::int64_t implied_head_dim = dims.hidden / dims.heads;
  dims.head_dim = dimension(m, "head_dim", implied_head_dim < 1 ? 1 : implied_head_dim, source);
  dims.intermediate = dimension(m, "intermediate_size", defaults.intermediate, source);
  dims.vocab = dimension(m, "vocab_size", defaults.vocab, source);
  if (const auto it = m.find("initializer_range"); it != m.end()) {
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() <= 0 || it->get<double>() > 1)
      refuse(source, "initializer_range", "must be a number in (0, 1], got " + brief(*it));
    d.initializer_range = it->get<double>();
  }
  return d;
}

}  // namespace nsv::engine
