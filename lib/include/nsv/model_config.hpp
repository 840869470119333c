#pragma once
// Hugging Face config.json of a Llama-family decoder (SPEC §2.1, §6 `nsv audit`).
//
// Accepted: architectures LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM
// (and their bare *Model classes); model_type llama, mistral, qwen2, qwen3. Every one of them has
// the seven Muon matrices q/k/v/o_proj and gate/up/down_proj per decoder layer, with the shapes
// model.hpp derives from ModelDims.
//
// Fields read (everything else in the file is ignored):
//   hidden_size, num_attention_heads, intermediate_size, num_hidden_layers, vocab_size  required
//   num_key_value_heads   absent or null -> num_attention_heads (multi-head attention)
//   head_dim              absent or null -> hidden_size / num_attention_heads
//   tie_word_embeddings   absent or null -> false
//   attention_bias        absent or null -> false (qwen2: q/k/v always carry a bias)
// Integers must be JSON integers (4096, not 4096.0 or "4096"), booleans JSON booleans.
//
// Every problem is a std::invalid_argument whose message names the file and the field: a missing
// or ill-typed field, an unsupported architecture, values that cannot describe a model (heads not
// divisible by KV heads, hidden not divisible by heads without head_dim, non-positive sizes), or
// malformed JSON (nlohmann's parse error, with its byte position).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "nsv/model.hpp"

namespace nsv {

struct ModelConfig {
  ModelDims dims;             // dims.name: "_name_or_path" when present, else the file's stem
  std::string source;         // the file it was read from ("<json>" for parse_model_config)
  std::string architecture;   // first entry of "architectures" (or derived from model_type)
  std::string model_type;     // llama | mistral | qwen2 | qwen3
  bool qkv_bias = false;      // q/k/v carry 1-D biases (Qwen2): parameters, but not Muon matrices
  bool mlp_bias = false;      // "mlp_bias" (Llama): 1-D biases on gate/up/down

  // Parameters outside the Muon matrices, for the whole-model count: token embedding, lm_head
  // (0 when tied), the RMSNorm weights (2 per layer + the final one), biases. All have ndim < 2
  // or are embeddings, so Muon leaves them to its AdamW fallback (SPEC §2.1).
  std::int64_t embedding_params() const;
  std::int64_t lm_head_params() const;
  std::int64_t norm_params() const;
  std::int64_t bias_params() const;
  std::int64_t muon_params_per_layer() const;
  std::int64_t muon_params() const;  // x num_hidden_layers
  std::int64_t total_params() const;
};

// Reads and validates a config.json. Throws std::invalid_argument naming the file and the field.
ModelConfig load_model_config(const std::string& path);
// The same on an already parsed document; `source` names it in messages.
ModelConfig parse_model_config(const nlohmann::json& doc, const std::string& source);

}  // namespace nsv
