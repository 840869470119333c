#include "nsv/model_config.hpp"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "nsv/input_file.hpp"

namespace nsv {
namespace {

using nlohmann::json;

struct Family {
  const char* model_type;
  const char* architectures[2];
};
constexpr Family kFamilies[] = {
    {"llama", {"LlamaForCausalLM", "LlamaModel"}},
    {"mistral", {"MistralForCausalLM", "MistralModel"}},
    {"qwen2", {"Qwen2ForCausalLM", "Qwen2Model"}},
    {"qwen3", {"Qwen3ForCausalLM", "Qwen3Model"}},
};

std::string supported_list() {
  std::string s;
  for (const auto& f : kFamilies) s += std::string(s.empty() ? "" : ", ") + f.architectures[0];
  return s + " (model_type llama, mistral, qwen2, qwen3)";
}

const Family* family_of_type(const std::string& t) {
  for (const auto& f : kFamilies)
    if (t == f.model_type) return &f;
  return nullptr;
}
const Family* family_of_architecture(const std::string& a) {
  for (const auto& f : kFamilies)
    for (const char* name : f.architectures)
      if (a == name) return &f;
  return nullptr;
}

std::string type_name(const json& v) {
  if (v.is_number_float()) return "a float";
  if (v.is_number_integer()) return "an integer";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  if (v.is_null()) return "null";
  return v.type_name();
}

std::string shown(const json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

class Reader {
 public:
  Reader(const json& doc, const std::string& source) : doc_(doc), source_(source) {}

  [[noreturn]] void fail(const std::string& what) const { throw std::invalid_argument(source_ + ": " + what); }

  bool present(const char* field) const { return doc_.contains(field) && !doc_.at(field).is_null(); }

  // A positive JSON integer no larger than `max`.
  std::int64_t positive(const char* field, std::int64_t max) const {
    if (!doc_.contains(field)) fail(std::string("required field \"") + field + "\" is missing");
    const json& v = doc_.at(field);
    if (!v.is_number_integer())
      fail(std::string("field \"") + field + "\" must be a positive integer, got " + type_name(v) + " " + shown(v));
    if (v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(max) : v.get<std::int64_t>() > max)
      fail(std::string("field \"") + field + "\" = " + shown(v) + " is implausibly large (limit " + std::to_string(max) + ")");
    const auto x = v.get<std::int64_t>();
    if (x < 1) fail(std::string("field \"") + field + "\" must be a positive integer, got " + shown(v));
    return x;
  }

  std::int64_t positive_or(const char* field, std::int64_t max, std::int64_t fallback) const {
    return present(field) ? positive(field, max) : fallback;
  }

  bool boolean_or(const char* field, bool fallback) const {
    if (!present(field)) return fallback;
    const json& v = doc_.at(field);
    if (!v.is_boolean()) fail(std::string("field \"") + field + "\" must be true or false, got " + type_name(v) + " " + shown(v));
    return v.get<bool>();
  }

  std::string string_or(const char* field, const std::string& fallback) const {
    if (!present(field)) return fallback;
    const json& v = doc_.at(field);
    if (!v.is_string()) fail(std::string("field \"") + field + "\" must be a string, got " + type_name(v) + " " + shown(v));
    return v.get<std::string>();
  }

  const json& doc() const { return doc_; }

 private:
  const json& doc_;
  const std::string& source_;
};

constexpr std::int64_t kMaxDim = std::int64_t{1} << 20;     // 1,048,576
constexpr std::int64_t kMaxVocab = std::int64_t{1} << 24;   // 16,777,216
constexpr std::int64_t kMaxLayers = 100000;

std::string stem_of(const std::string& path) {
  const auto stem = std::filesystem::path(path).stem().string();
  return stem.empty() ? path : stem;
}

}  // namespace

ModelConfig parse_model_config(const json& doc, const std::string& source) {
  const Reader in(doc, source);
  if (!doc.is_object()) in.fail("expected a JSON object (a Hugging Face config.json), got " + type_name(doc));

  ModelConfig c;
  c.source = source;

  // Architecture and family.
  const Family* by_arch = nullptr;
  if (in.present("architectures")) {
    const json& a = doc.at("architectures");
    if (!a.is_array() || a.empty() || !a.at(0).is_string())
      in.fail("field \"architectures\" must be a non-empty array of class names, got " + type_name(a) + " " + shown(a));
    c.architecture = a.at(0).get<std::string>();
    by_arch = family_of_architecture(c.architecture);
    if (!by_arch)
      in.fail("unsupported architecture \"" + c.architecture + "\" (field \"architectures\"): only Llama-family decoders are read: " +
              supported_list());
  }
  c.model_type = in.string_or("model_type", "");
  if (c.model_type.empty() && !by_arch)
    in.fail("required field \"model_type\" is missing (and there is no \"architectures\" entry to tell the family)");
  const Family* by_type = c.model_type.empty() ? by_arch : family_of_type(c.model_type);
  if (!by_type)
    in.fail("unsupported model_type \"" + c.model_type + "\" (field \"model_type\"): only Llama-family decoders are read: " +
            supported_list());
  if (by_arch && by_arch != by_type)
    in.fail("field \"model_type\" = \"" + c.model_type + "\" does not match architecture \"" + c.architecture + "\"");
  if (c.model_type.empty()) c.model_type = by_type->model_type;
  if (c.architecture.empty()) c.architecture = by_type->architectures[0];

  ModelDims& d = c.dims;
  d.name = in.string_or("_name_or_path", "");
  if (d.name.empty()) d.name = stem_of(source);
  d.hidden = in.positive("hidden_size", kMaxDim);
  d.heads = in.positive("num_attention_heads", kMaxDim);
  d.kv_heads = in.positive_or("num_key_value_heads", kMaxDim, d.heads);
  d.intermediate = in.positive("intermediate_size", kMaxDim);
  d.layers = in.positive("num_hidden_layers", kMaxLayers);
  d.vocab = in.positive("vocab_size", kMaxVocab);
  d.tie_word_embeddings = in.boolean_or("tie_word_embeddings", false);

  if (d.kv_heads > d.heads)
    in.fail("num_key_value_heads (" + std::to_string(d.kv_heads) + ") exceeds num_attention_heads (" + std::to_string(d.heads) + ")");
  if (d.heads % d.kv_heads != 0)
    in.fail("num_attention_heads (" + std::to_string(d.heads) + ") is not divisible by num_key_value_heads (" +
            std::to_string(d.kv_heads) + "): grouped-query attention needs a whole number of query heads per KV head");
  if (in.present("head_dim")) {
    d.head_dim = in.positive("head_dim", kMaxDim);
  } else {
    if (d.hidden % d.heads != 0)
      in.fail("hidden_size (" + std::to_string(d.hidden) + ") is not divisible by num_attention_heads (" + std::to_string(d.heads) +
              ") and there is no \"head_dim\" field to give the head size");
    d.head_dim = d.hidden / d.heads;
  }
  if (d.heads * d.head_dim > kMaxDim)
    in.fail("num_attention_heads x head_dim = " + std::to_string(d.heads * d.head_dim) + " is implausibly large");

  if (c.model_type == "qwen2") {
    c.qkv_bias = true;  // Qwen2Attention: q/k/v Linear(bias=True), o_proj bias=False
  } else if (c.model_type == "llama" || c.model_type == "qwen3") {
    c.qkv_bias = in.boolean_or("attention_bias", false);
  }
  if (c.model_type == "llama") c.mlp_bias = in.boolean_or("mlp_bias", false);
  return c;
}

ModelConfig load_model_config(const std::string& path) {
  json doc;
  try {
    doc = json::parse(read_input_file(path, "model config"));  // a regular file only: a FIFO never blocks
  } catch (const json::parse_error& e) {
    throw std::invalid_argument(path + ": malformed JSON: " + e.what());
  } catch (const std::runtime_error& e) {  // an unreadable config is a bad argument, as the other errors here
    throw std::invalid_argument(e.what());
  }
  return parse_model_config(doc, path);
}

std::int64_t ModelConfig::embedding_params() const { return dims.vocab * dims.hidden; }
std::int64_t ModelConfig::lm_head_params() const { return dims.tie_word_embeddings ? 0 : dims.vocab * dims.hidden; }

std::int64_t ModelConfig::norm_params() const {
  std::int64_t per_layer = 2 * dims.hidden;                      // input and post-attention RMSNorm
  if (model_type == "qwen3") per_layer += 2 * dims.head_dim;     // q_norm, k_norm
  return dims.layers * per_layer + dims.hidden;                  // + the final norm
}

std::int64_t ModelConfig::bias_params() const {
  const std::int64_t q = dims.heads * dims.head_dim, kv = dims.kv_heads * dims.head_dim;
  std::int64_t per_layer = 0;
  if (qkv_bias) per_layer += q + 2 * kv + (model_type == "qwen2" ? 0 : dims.hidden);  // Llama's attention_bias covers o_proj too
  if (mlp_bias) per_layer += 2 * dims.intermediate + dims.hidden;
  return dims.layers * per_layer;
}

std::int64_t ModelConfig::muon_params_per_layer() const {
  std::int64_t n = 0;
  for (const auto& p : llama_layer_params(dims)) n += p.elements();
  return n;
}
std::int64_t ModelConfig::muon_params() const { return muon_params_per_layer() * dims.layers; }

std::int64_t ModelConfig::total_params() const {
  return embedding_params() + lm_head_params() + norm_params() + bias_params() + muon_params();
}

}  // namespace nsv
