#pragma once
// Hugging Face config.json of a decoder that `nsv audit` knows (SPEC §2.1, §6 `nsv audit`): one
// family record each (nsv/analysis/architectures.hpp: Llama, Mistral, Qwen2, Qwen3, Gemma, Gemma-2,
// Phi-3, Falcon, Mixtral, Qwen2-MoE, GPT-BigCode). The family is found from "architectures" (its
// first entry) or "model_type"; both must agree when both are present.
//
// Fields read (everything else in the file is ignored), for the Llama-style families:
//   hidden_size, num_attention_heads, intermediate_size, num_hidden_layers, vocab_size  required
//   num_key_value_heads   absent or null -> num_attention_heads (multi-head attention)
//   head_dim              absent or null -> hidden_size / num_attention_heads
//   tie_word_embeddings   absent or null -> the family's default (true for Gemma, Falcon, BigCode)
//   attention_bias        absent or null -> false (qwen2, qwen2_moe: q/k/v always carry a bias)
// and each family's own (architectures.cpp: num_local_experts, moe_intermediate_size, n_embd, ...).
// Integers must be JSON integers (4096, not 4096.0 or "4096"), booleans JSON booleans, and every
// size is range-checked (config_reader.hpp) before anything is computed from it.
//
// Every problem is a std::invalid_argument whose message names the file and the field and shows
// the value: a missing or ill-typed field, an unsupported architecture (the message lists the
// supported ones), values that cannot describe a model (heads not divisible by KV heads, hidden
// not divisible by heads without head_dim, non-positive sizes, a parameter count beyond 64 bits),
// or malformed JSON (its byte position).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "nsv/analysis/architectures.hpp"
#include "nsv/model.hpp"

namespace nsv {

struct ModelConfig {
  ModelDims dims;             // dims.name: "_name_or_path" when present, else the file's stem
  std::string source;         // the file it was read from ("<json>" for parse_model_config)
  std::string architecture;   // first entry of "architectures" (or derived from model_type)
  std::string model_type;     // the family record's model_type
  const ArchitectureRecord* family = nullptr;
  bool qkv_bias = false;      // q/k/v carry 1-D biases (Qwen2): parameters, but not Muon matrices
  bool mlp_bias = false;      // "mlp_bias" (Llama): 1-D biases on gate/up/down
  bool linear_bias = false;   // every linear layer carries a bias (GPT-BigCode; Falcon with "bias")

  // The Muon matrices of one decoder layer (the family record's), in its order.
  std::vector<MuonParam> layer_params() const;

  // Parameters outside the Muon matrices, for the whole-model count: token (and position)
  // embeddings, lm_head (0 when tied), the norm weights, biases. All have ndim < 2 or are
  // embeddings, so Muon leaves them to its AdamW fallback (SPEC §2.1). Every count is checked
  // against 64-bit overflow (std::overflow_error naming the config).
  std::int64_t embedding_params() const;
  std::int64_t lm_head_params() const;
  std::int64_t norm_params() const;
  std::int64_t bias_params() const;
  std::int64_t muon_params_per_layer() const;  // every copy of every matrix of a layer
  std::int64_t muon_params() const;            // x num_hidden_layers
  std::int64_t total_params() const;
};

// Reads and validates a config.json. Throws std::invalid_argument naming the file and the field.
ModelConfig load_model_config(const std::string& path);
// The same on an already parsed document; `source` names it in messages.
ModelConfig parse_model_config(const nlohmann::json& doc, const std::string& source);

}  // namespace nsv
