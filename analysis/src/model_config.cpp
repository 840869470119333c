#include "nsv/analysis/model_config.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "nsv/checked.hpp"
#include "config_reader.hpp"
#include "nsv/input_file.hpp"

namespace nsv {
namespace {

using nlohmann::json;
using detail::ConfigReader;

std::string stem_of(const std::string& path) {
  const auto stem = std::filesystem::path(path).stem().string();
  return stem.empty() ? path : stem;
}

// The family from "architectures" and "model_type" (both must agree when both are given).
const ArchitectureRecord& find_family(const ConfigReader& in, const json& doc, ModelConfig& c) {
  const ArchitectureRecord* by_class = nullptr;
  if (in.present("architectures")) {
    const json& a = doc.at("architectures");
    if (!a.is_array() || a.empty() || !a.at(0).is_string())
      in.fail("field \"architectures\" must be a non-empty array of class names, got " + detail::json_type_name(a) + " " +
              detail::shown_value(a));
    c.architecture = a.at(0).get<std::string>();
    by_class = architecture_of_class(c.architecture);
    if (!by_class)
      in.fail("unsupported architecture \"" + c.architecture + "\" (field \"architectures\"); supported: " +
              supported_architectures());
  }
  c.model_type = in.string_or("model_type", "");
  if (c.model_type.empty() && !by_class)
    in.fail("required field \"model_type\" is missing (and there is no \"architectures\" entry to tell the family)");
  const ArchitectureRecord* by_type = c.model_type.empty() ? by_class : architecture_of_model_type(c.model_type);
  if (!by_type)
    in.fail("unsupported model_type \"" + c.model_type + "\" (field \"model_type\"); supported: " + supported_architectures());
  if (by_class && by_class != by_type)
    in.fail("field \"model_type\" = \"" + c.model_type + "\" does not match architecture \"" + c.architecture + "\"");
  if (c.model_type.empty()) c.model_type = std::string(by_type->model_type);
  if (c.architecture.empty()) c.architecture = std::string(by_type->architectures[0]);
  return *by_type;
}

// What every family needs, whatever the fields were called: KV heads that group the heads, a
// head size, and counts that fit in 64 bits.
void check_heads(const ConfigReader& in, const ModelDims& d) {
  if (d.kv_heads > d.heads)
    in.fail("num_key_value_heads (" + std::to_string(d.kv_heads) + ") exceeds num_attention_heads (" + std::to_string(d.heads) + ")");
  if (d.heads % d.kv_heads != 0)
    in.fail("num_attention_heads (" + std::to_string(d.heads) + ") is not divisible by num_key_value_heads (" +
            std::to_string(d.kv_heads) + "): grouped-query attention needs a whole number of query heads per KV head");
  if (d.heads * d.head_dim > detail::kMaxDim)
    in.fail("num_attention_heads x head_dim = " + std::to_string(d.heads * d.head_dim) + " is implausibly large (limit " +
            std::to_string(detail::kMaxDim) + ")");
}

}  // namespace

ModelConfig parse_model_config(const json& doc, const std::string& source) {
  const ConfigReader in(doc, source);
  if (!doc.is_object())
    in.fail("expected a JSON object (a Hugging Face config.json), got " + detail::json_type_name(doc) + " " + detail::shown_value(doc));
  ModelConfig c;
  c.source = source;
  try {
    c.family = &find_family(in, doc, c);
    c.dims.name = in.string_or("_name_or_path", "");
    if (c.dims.name.empty()) c.dims.name = stem_of(source);
    c.family->read(in, c);
  } catch (const json::exception& e) {  // every access is type-checked first; this is a last guard
    in.fail(std::string("unreadable field (") + e.what() + ")");
  }
  if (c.dims.autotp_kv_heads == 0) c.dims.autotp_kv_heads = c.dims.kv_heads;
  check_heads(in, c.dims);
  try {
    (void)c.total_params();  // every count the audit makes from it fits in 64 bits
  } catch (const std::overflow_error& e) {
    in.fail(std::string("the config describes a model too large to count: ") + e.what());
  }
  return c;
}

ModelConfig load_model_config(const std::string& path) {
  json doc;
  try {
    doc = json::parse(read_input_file(path, "model config"));  // a regular file only: a FIFO never blocks
  } catch (const json::parse_error& e) {
    throw std::invalid_argument(path + ": malformed JSON at byte " + std::to_string(e.byte) + ": " + e.what());
  } catch (const json::exception& e) {
    throw std::invalid_argument(path + ": unreadable JSON: " + e.what());
  } catch (const std::runtime_error& e) {  // an unreadable config is a bad argument, as the other errors here
    throw std::invalid_argument(e.what());
  }
  return parse_model_config(doc, path);
}

std::vector<MuonParam> ModelConfig::layer_params() const {
  if (!family) throw std::logic_error("ModelConfig without a family record");
  return family->layer_params(*this);
}

namespace {
using detail::checked_add;
using detail::checked_mul;
}  // namespace

std::int64_t ModelConfig::embedding_params() const {
  const std::string what = source + ": the embedding parameter count";
  return checked_add(checked_mul(dims.vocab, dims.hidden, what), checked_mul(dims.positions, dims.hidden, what), what);
}

std::int64_t ModelConfig::lm_head_params() const {
  return dims.tie_word_embeddings ? 0 : checked_mul(dims.vocab, dims.hidden, source + ": the lm_head parameter count");
}

std::int64_t ModelConfig::norm_params() const {
  const NonMuonCounts n = family->non_muon(*this);
  const std::string what = source + ": the norm parameter count";
  return checked_add(checked_mul(dims.layers, n.norms_per_layer, what), n.final_norm, what);
}

std::int64_t ModelConfig::bias_params() const {
  return checked_mul(dims.layers, family->non_muon(*this).biases_per_layer, source + ": the bias parameter count");
}

std::int64_t ModelConfig::muon_params_per_layer() const {
  const std::string what = source + ": the Muon parameter count of a layer";
  std::int64_t n = 0;
  for (const auto& p : layer_params()) n = checked_add(n, checked_mul(checked_mul(p.rows, p.cols, what), p.copies, what), what);
  return n;
}

std::int64_t ModelConfig::muon_params() const {
  return checked_mul(muon_params_per_layer(), dims.layers, source + ": the Muon parameter count");
}

std::int64_t ModelConfig::total_params() const {
  const std::string what = source + ": the parameter count";
  std::int64_t n = muon_params();
  for (std::int64_t part : {embedding_params(), lm_head_params(), norm_params(), bias_params()}) n = checked_add(n, part, what);
  return n;
}

}  // namespace nsv
