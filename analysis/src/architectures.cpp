// The architecture families of `nsv audit`, one record each, with where DeepSpeed's AutoTP rule
// for the family is (file:line at kDeepSpeedCommit, deepspeedai/DeepSpeed). The rules they share:
//   - get_shard_size (tp_shard.py:78-81): head-aligned on the num_kv_heads global when it divides
//     the dimension and the layer's name is not an MLP/MoE one, else the grain rule (:82-93);
//     the exempt names: "mlp" and gate_proj/up_proj/down_proj/w1/w2/w3 (:62-67).
//   - num_kv_heads is the first of multi_query_group_num, num_kv_heads, num_key_value_heads,
//     num_attention_heads, n_heads that the config has (auto_tp.py:758-770, replace_module.py:301-306).
//   - row-parallel (LinearAllreduce, split along dim 1): o_proj, down_proj, out_proj and the linear
//     before a LayerNorm (auto_tp.py:313-336, :395-405); everything else column-parallel
//     (LinearLayer, dim 0, :406-415), fused q/k/v names through fused_LinearLayer (:411-413,
//     fusedqkv_utils.py:18-26).
//   - skipped, so every rank holds the whole matrix: MoE routers (auto_tp.py:375-377).
#include "nsv/analysis/architectures.hpp"

#include <stdexcept>

#include "config_reader.hpp"
#include "nsv/analysis/model_config.hpp"

namespace nsv {
namespace {

using detail::ConfigReader;
using detail::kMaxDim;
using detail::kMaxExperts;
using detail::kMaxLayers;
using detail::kMaxVocab;

// ---- config fields -----------------------------------------------------------------------------

// hidden_size, num_attention_heads, num_key_value_heads, head_dim, intermediate_size,
// num_hidden_layers, vocab_size, tie_word_embeddings: the Llama-style names.
void read_llama_style(const ConfigReader& in, ModelConfig& c) {
  ModelDims& d = c.dims;
  d.hidden = in.positive("hidden_size", kMaxDim);
  d.heads = in.positive("num_attention_heads", kMaxDim);
  d.kv_heads = in.positive_or("num_key_value_heads", kMaxDim, d.heads);
  d.intermediate = in.positive("intermediate_size", kMaxDim);
  d.layers = in.positive("num_hidden_layers", kMaxLayers);
  d.vocab = in.positive("vocab_size", kMaxVocab);
  d.tie_word_embeddings = in.boolean_or("tie_word_embeddings", c.family->tied_by_default);
  if (in.present("head_dim")) {
    d.head_dim = in.positive("head_dim", kMaxDim);
  } else {
    if (d.hidden % d.heads != 0)
      in.fail("hidden_size (" + std::to_string(d.hidden) + ") is not divisible by num_attention_heads (" + std::to_string(d.heads) +
              ") and there is no \"head_dim\" field to give the head size");
    d.head_dim = d.hidden / d.heads;
  }
}

void read_llama(const ConfigReader& in, ModelConfig& c) {
  read_llama_style(in, c);
  c.qkv_bias = in.boolean_or("attention_bias", false);
  c.mlp_bias = in.boolean_or("mlp_bias", false);
}
void read_mistral(const ConfigReader& in, ModelConfig& c) { read_llama_style(in, c); }
void read_qwen2(const ConfigReader& in, ModelConfig& c) {
  read_llama_style(in, c);
  c.qkv_bias = true;  // Qwen2Attention: q/k/v Linear(bias=True), o_proj bias=False
}
void read_attention_bias(const ConfigReader& in, ModelConfig& c) {  // qwen3, gemma, gemma2
  read_llama_style(in, c);
  c.qkv_bias = in.boolean_or("attention_bias", false);
}

void read_phi3(const ConfigReader& in, ModelConfig& c) {
  read_llama_style(in, c);
  // fusedqkv_utils.py:168-170 cuts qkv_proj with head_dim = hidden // heads: a head_dim field
  // that says otherwise would be cut at the wrong rows.
  if (c.dims.head_dim * c.dims.heads != c.dims.hidden)
    in.fail("head_dim x num_attention_heads must equal hidden_size for Phi-3 (AutoTP's phi3 rule derives head_dim "
            "from hidden_size), got " + std::to_string(c.dims.head_dim) + " x " + std::to_string(c.dims.heads));
}

void read_mixtral(const ConfigReader& in, ModelConfig& c) {
  read_llama_style(in, c);
  c.dims.experts = in.positive("num_local_experts", kMaxExperts);
  c.dims.expert_intermediate = c.dims.intermediate;  // Mixtral's intermediate_size is each expert's
}

void read_qwen2_moe(const ConfigReader& in, ModelConfig& c) {
  read_llama_style(in, c);
  c.qkv_bias = true;
  c.dims.experts = in.positive("num_experts", kMaxExperts);
  c.dims.expert_intermediate = in.positive("moe_intermediate_size", kMaxDim);
  c.dims.shared_expert_intermediate = in.positive("shared_expert_intermediate_size", kMaxDim);
  if (in.positive_or("decoder_sparse_step", kMaxLayers, 1) != 1)
    in.fail("field \"decoder_sparse_step\" must be 1 (every layer a MoE layer): dense layers between MoE layers are not supported");
  in.require_empty_array("mlp_only_layers", "every layer must be a MoE layer");
}

void read_falcon(const ConfigReader& in, ModelConfig& c) {
  ModelDims& d = c.dims;
  d.hidden = in.positive("hidden_size", kMaxDim);
  d.heads = in.positive("num_attention_heads", kMaxDim);
  d.layers = in.positive("num_hidden_layers", kMaxLayers);
  d.vocab = in.positive("vocab_size", kMaxVocab);
  d.tie_word_embeddings = in.boolean_or("tie_word_embeddings", true);
  if (d.hidden % d.heads != 0)
    in.fail("hidden_size (" + std::to_string(d.hidden) + ") is not divisible by num_attention_heads (" + std::to_string(d.heads) + ")");
  d.head_dim = d.hidden / d.heads;
  d.intermediate = in.positive_or("ffn_hidden_size", kMaxDim, 4 * d.hidden);
  in.require_boolean("new_decoder_architecture", false, false,
                     "the grouped [q..., k, v] per KV group layout of Falcon-40B/180B is not among the supported layouts");
  in.require_boolean("multi_query", true, true, "only Falcon-7B's multi-query layout [Q; K; V] with one KV head is supported");
  in.require_boolean("parallel_attn", true, true, "only the parallel attention/MLP block (one LayerNorm) is supported");
  in.require_boolean("alibi", false, false, "ALiBi Falcon variants are not supported");
  d.kv_heads = 1;
  // FalconConfig sets num_kv_heads = num_attention_heads when the file omits it (transformers
  // configuration_falcon.py), and AutoTP reads that attribute (auto_tp.py:761-769).
  d.autotp_kv_heads = in.positive_or("num_kv_heads", kMaxDim, d.heads);
  c.linear_bias = in.boolean_or("bias", false);
}

void read_gpt_bigcode(const ConfigReader& in, ModelConfig& c) {
  ModelDims& d = c.dims;
  d.hidden = in.positive("n_embd", kMaxDim);
  d.heads = in.positive("n_head", kMaxDim);
  d.layers = in.positive("n_layer", kMaxLayers);
  d.vocab = in.positive("vocab_size", kMaxVocab);
  d.positions = in.positive("n_positions", kMaxDim);
  d.intermediate = in.positive_or("n_inner", kMaxDim, 4 * d.hidden);
  d.tie_word_embeddings = in.boolean_or("tie_word_embeddings", true);
  if (d.hidden % d.heads != 0)
    in.fail("n_embd (" + std::to_string(d.hidden) + ") is not divisible by n_head (" + std::to_string(d.heads) + ")");
  d.head_dim = d.hidden / d.heads;
  in.require_boolean("multi_query", true, true,
                     "AutoTP's bigcode rule splits the first n_embd rows of c_attn and replicates the rest, which is "
                     "meant for one shared K and V head (multi-query)");
  d.kv_heads = 1;
  d.autotp_kv_heads = d.heads;  // GPTBigCodeConfig maps num_attention_heads to n_head
  c.linear_bias = true;         // GPTBigCode's Linear layers all carry biases
}

// ---- Muon matrices ------------------------------------------------------------------------------

std::vector<MuonParam> llama_params(const ModelConfig& c) { return llama_layer_params(c.dims); }

// q/k/v/o_proj as the Llama family has them (the first four of llama_layer_params).
std::vector<MuonParam> attention(const ModelDims& d) {
  auto p = llama_layer_params(d);
  p.resize(4);
  return p;
}

MuonParam column(std::string name, std::int64_t rows, std::int64_t cols, std::int64_t copies = 1, bool expert = false) {
  MuonParam p{name, rows, cols, Role::column_parallel, 0};
  p.copies = copies;
  p.expert = expert;
  return p;
}
MuonParam row(std::string name, std::int64_t rows, std::int64_t cols, std::int64_t copies = 1, bool expert = false) {
  MuonParam p{name, rows, cols, Role::row_parallel, 1};
  p.copies = copies;
  p.expert = expert;
  return p;
}
MuonParam replicated(std::string name, std::int64_t rows, std::int64_t cols) { return {name, rows, cols, Role::replicated, 0}; }

// A fused [Q;K;V] projection with `kv` KV heads, cut by `kind`; AutoTP's rule splits it by the
// model's num_kv_heads global.
MuonParam fused_qkv(std::string name, FusedKind kind, const ModelDims& d, std::int64_t kv) {
  MuonParam p{name, (d.heads + 2 * kv) * d.head_dim, d.hidden, Role::column_parallel, 0, d.heads + 2 * kv, d.head_dim,
              d.autotp_kv_heads};
  p.fused = kind;
  p.parts = {{"q", d.heads * d.head_dim, true}, {"k", kv * d.head_dim, true}, {"v", kv * d.head_dim, true}};
  return p;
}

// The row-parallel output projection of the attention: heads on dim 1, split by AutoTP's global.
MuonParam out_proj(std::string name, const ModelDims& d) {
  return {name, d.hidden, d.heads * d.head_dim, Role::row_parallel, 1, d.heads, d.head_dim, d.autotp_kv_heads};
}

std::vector<MuonParam> phi3_params(const ModelConfig& c) {
  const ModelDims& d = c.dims;
  MuonParam gate_up = column("gate_up_proj", 2 * d.intermediate, d.hidden);
  gate_up.fused = FusedKind::gate_up;
  gate_up.parts = {{"gate", d.intermediate, false}, {"up", d.intermediate, false}};
  return {fused_qkv("qkv_proj", FusedKind::phi3, d, d.kv_heads), out_proj("o_proj", d), gate_up,
          row("down_proj", d.hidden, d.intermediate)};
}

std::vector<MuonParam> falcon_params(const ModelConfig& c) {
  const ModelDims& d = c.dims;
  return {fused_qkv("query_key_value", FusedKind::bloom, d, d.kv_heads), out_proj("dense", d),
          column("dense_h_to_4h", d.intermediate, d.hidden), row("dense_4h_to_h", d.hidden, d.intermediate)};
}

std::vector<MuonParam> gpt_bigcode_params(const ModelConfig& c) {
  const ModelDims& d = c.dims;
  return {fused_qkv("attn.c_attn", FusedKind::bigcode, d, d.kv_heads), out_proj("attn.c_proj", d),
          column("mlp.c_fc", d.intermediate, d.hidden), row("mlp.c_proj", d.hidden, d.intermediate)};
}

std::vector<MuonParam> mixtral_params(const ModelConfig& c) {
  const ModelDims& d = c.dims;
  auto p = attention(d);
  p.push_back(replicated("block_sparse_moe.gate", d.experts, d.hidden));
  p.push_back(column("experts.w1", d.expert_intermediate, d.hidden, d.experts, true));
  p.push_back(column("experts.w3", d.expert_intermediate, d.hidden, d.experts, true));
  p.push_back(row("experts.w2", d.hidden, d.expert_intermediate, d.experts, true));
  return p;
}

std::vector<MuonParam> qwen2_moe_params(const ModelConfig& c) {
  const ModelDims& d = c.dims;
  auto p = attention(d);
  p.push_back(replicated("mlp.gate", d.experts, d.hidden));
  p.push_back(column("experts.gate_proj", d.expert_intermediate, d.hidden, d.experts, true));
  p.push_back(column("experts.up_proj", d.expert_intermediate, d.hidden, d.experts, true));
  p.push_back(row("experts.down_proj", d.hidden, d.expert_intermediate, d.experts, true));
  p.push_back(column("shared_expert.gate_proj", d.shared_expert_intermediate, d.hidden));
  p.push_back(column("shared_expert.up_proj", d.shared_expert_intermediate, d.hidden));
  p.push_back(row("shared_expert.down_proj", d.hidden, d.shared_expert_intermediate));
  p.push_back(replicated("mlp.shared_expert_gate", 1, d.hidden));
  return p;
}

// ---- non-Muon parameters ------------------------------------------------------------------------

std::int64_t attention_biases(const ModelConfig& c, bool with_o) {
  const ModelDims& d = c.dims;
  return c.qkv_bias ? (d.heads + 2 * d.kv_heads) * d.head_dim + (with_o ? d.hidden : 0) : 0;
}
std::int64_t mlp_biases(const ModelConfig& c) { return c.mlp_bias ? 2 * c.dims.intermediate + c.dims.hidden : 0; }

// RMSNorm before attention and MLP, a final one; biases as the config says.
NonMuonCounts llama_counts(const ModelConfig& c) {
  return {2 * c.dims.hidden, attention_biases(c, true) + mlp_biases(c), c.dims.hidden};
}
NonMuonCounts qwen2_counts(const ModelConfig& c) { return {2 * c.dims.hidden, attention_biases(c, false), c.dims.hidden}; }
NonMuonCounts qwen3_counts(const ModelConfig& c) {  // + q_norm, k_norm over head_dim
  return {2 * c.dims.hidden + 2 * c.dims.head_dim, attention_biases(c, true), c.dims.hidden};
}
NonMuonCounts gemma2_counts(const ModelConfig& c) {  // input, post-attention, pre- and post-feedforward norms
  return {4 * c.dims.hidden, attention_biases(c, true), c.dims.hidden};
}
NonMuonCounts phi3_counts(const ModelConfig& c) { return {2 * c.dims.hidden, 0, c.dims.hidden}; }
NonMuonCounts falcon_counts(const ModelConfig& c) {  // one LayerNorm (weight and bias) per layer, ln_f
  const ModelDims& d = c.dims;
  const std::int64_t biases = c.linear_bias ? (d.heads + 2) * d.head_dim + 2 * d.hidden + d.intermediate : 0;
  return {2 * d.hidden, biases, 2 * d.hidden};
}
NonMuonCounts gpt_bigcode_counts(const ModelConfig& c) {  // ln_1, ln_2 (weight and bias), ln_f; every linear's bias
  const ModelDims& d = c.dims;
  return {4 * d.hidden, (d.heads + 2) * d.head_dim + 2 * d.hidden + d.intermediate, 2 * d.hidden};
}

constexpr const char* kLlamaRule =
    "auto_tp.py:319-322 (o_proj, down_proj row-parallel), :406-415 (q/k/v/gate/up column-parallel), "
    "tp_shard.py:78-81 (q/k/v/o head-aligned on num_key_value_heads), :62-67,82-93 (MLP: grain rule)";

// The table. Its order is the order of the refusal's list.
const ArchitectureRecord kRecords[] = {
    {"llama", {"LlamaForCausalLM", "LlamaModel"}, "meta-llama/Meta-Llama-3-8B", kLlamaRule, false, ExpertPlacement::none,
     read_llama, llama_params, llama_counts},
    {"mistral", {"MistralForCausalLM", "MistralModel"}, "mistralai/Mistral-7B-v0.1", kLlamaRule, false,
     ExpertPlacement::none, read_mistral, llama_params, llama_counts},
    {"qwen2", {"Qwen2ForCausalLM", "Qwen2Model"}, "Qwen/Qwen2.5-7B", kLlamaRule, false, ExpertPlacement::none, read_qwen2,
     llama_params, qwen2_counts},
    {"qwen3", {"Qwen3ForCausalLM", "Qwen3Model"}, "Qwen/Qwen3-8B", kLlamaRule, false, ExpertPlacement::none,
     read_attention_bias, llama_params, qwen3_counts},
    // Gemma: Llama's names and rules, with an explicit head_dim (Gemma-7B: 16 x 256 = 4096 rows
    // of q_proj against a hidden size of 3072), so o_proj is [hidden, heads*head_dim].
    {"gemma", {"GemmaForCausalLM", "GemmaModel"}, "google/gemma-7b", kLlamaRule, true, ExpertPlacement::none,
     read_attention_bias, llama_params, llama_counts},
    {"gemma2", {"Gemma2ForCausalLM", "Gemma2Model"}, "google/gemma-2-9b", kLlamaRule, true, ExpertPlacement::none,
     read_attention_bias, llama_params, gemma2_counts},
    // Phi-3: qkv_proj is fused (fusedqkv_utils.py:19 "qkv_proj"; :40 Phi3DecoderLayer -> phi3type);
    // its sub-parameters are (Q, K, V) with head_dim = hidden // heads (:77-80), each cut by
    // get_shard_size_list on num_key_value_heads and a rank's pieces concatenated (layers.py:
    // 1087-1089, 1520-1528, 1562-1571; the same cut as _phi3_type_transpose, fusedqkv_utils.py:
    // 166-178). gate_up_proj is GateUpPack_LinearLayer (auto_tp.py:387-388): halves (gate, up),
    // each by the grain rule under the name "mlp" (layers.py:1204-1211). o_proj, down_proj
    // row-parallel (auto_tp.py:319-322).
    {"phi3", {"Phi3ForCausalLM", "Phi3Model"}, "microsoft/Phi-3-mini-4k-instruct",
     "fusedqkv_utils.py:19,40,77-80,166-178; layers.py:1087-1089,1204-1211,1520-1528; auto_tp.py:319-322,387-388", false,
     ExpertPlacement::none, read_phi3, phi3_params, phi3_counts},
    // Falcon-7B: query_key_value is fused (fusedqkv_utils.py:19), FalconDecoderLayer -> bloomtype
    // (:37), one sub-parameter (:68-69) cut contiguously by get_shard_size_list (:152-156). Its
    // rows are [Q (71 heads); K; V] (multi-query), and num_kv_heads is FalconConfig's 71: 4672
    // rows are not a multiple of 71, so the grain rule cuts them (tp_shard.py:82-93), through
    // heads. dense: row-parallel by the Falcon hack (auto_tp.py:325-327), 4544 = 71 x 64 columns,
    // head-aligned on 71. dense_h_to_4h column-parallel (grain: "mlp" in its name),
    // dense_4h_to_h row-parallel (the linear before the LayerNorm, auto_tp.py:314-316).
    {"falcon", {"FalconForCausalLM", "FalconModel"}, "tiiuae/falcon-7b",
     "fusedqkv_utils.py:19,37,68-69,152-156; tp_shard.py:78-93; auto_tp.py:314-316,325-327,761-769", true,
     ExpertPlacement::none, read_falcon, falcon_params, falcon_counts},
    // Mixtral: the router block_sparse_moe.gate is skipped (auto_tp.py:375), so replicated;
    // experts w1/w3 column-parallel and w2 row-parallel (auto_tp.py:329-330), each by the grain
    // rule (tp_shard.py:64). Today: AutoEP places whole experts (auto_ep_presets/mixtral.py:11-28,
    // transformers >= 5 fused 3-D experts), and Muon orthogonalizes each expert on its own
    // (moe/ep_experts.py:217-223 is_expert_group; runtime/zero/muon/original_muon.py:150-153).
    {"mixtral", {"MixtralForCausalLM", "MixtralModel"}, "mistralai/Mixtral-8x7B-v0.1",
     "auto_tp.py:319-322,329-330,375; tp_shard.py:64; auto_ep_presets/mixtral.py:11-28; moe/ep_experts.py:217-223", false,
     ExpertPlacement::expert_parallel, read_mixtral, mixtral_params, llama_counts},
    // Qwen2-MoE: mlp.gate and mlp.shared_expert_gate skipped (auto_tp.py:375-376); experts and the
    // shared expert: gate_proj/up_proj column-parallel, down_proj row-parallel (auto_tp.py:395),
    // grain rule (tp_shard.py:64). Today: AutoEP's qwen3_moe preset covers qwen2_moe
    // (auto_ep_presets/qwen3_moe.py:11-33) and leaves the shared expert to AutoTP
    // (auto_tp.py:668-687).
    {"qwen2_moe", {"Qwen2MoeForCausalLM", "Qwen2MoeModel"}, "Qwen/Qwen1.5-MoE-A2.7B",
     "auto_tp.py:319-322,375-376,395,668-687; tp_shard.py:64; auto_ep_presets/qwen3_moe.py:11-33", false,
     ExpertPlacement::expert_parallel, read_qwen2_moe, qwen2_moe_params, qwen2_counts},
    // GPT-BigCode (StarCoder): c_attn is fused (fusedqkv_utils.py:19), GPTBigCodeBlock ->
    // bigcodetype (:38): the first n_embd rows (Q) cut by get_shard_size_list, the rest (K, V of
    // the one KV head) replicated on every rank (:158-164), which has no sub-parameter
    // description (:81-83, layers.py:1097-1108). attn.c_proj and mlp.c_proj precede a LayerNorm
    // (the next block's ln_1 for mlp.c_proj: layer_list[-1]) and are row-parallel
    // (auto_tp.py:313-316); num_kv_heads is n_head (config attribute num_attention_heads).
    {"gpt_bigcode", {"GPTBigCodeForCausalLM", "GPTBigCodeModel"}, "bigcode/starcoder",
     "fusedqkv_utils.py:19,38,81-83,158-164; layers.py:1097-1108; auto_tp.py:313-316,761-769", true,
     ExpertPlacement::none, read_gpt_bigcode, gpt_bigcode_params, gpt_bigcode_counts},
};

}  // namespace

std::string_view expert_placement_name(ExpertPlacement p) {
  return p == ExpertPlacement::expert_parallel ? "expert_parallel" : "none";
}

std::span<const ArchitectureRecord> architecture_records() { return kRecords; }

const ArchitectureRecord* architecture_of_model_type(std::string_view t) {
  for (const auto& r : kRecords)
    if (r.model_type == t) return &r;
  return nullptr;
}

const ArchitectureRecord* architecture_of_class(std::string_view a) {
  for (const auto& r : kRecords)
    for (std::string_view name : r.architectures)
      if (a == name) return &r;
  return nullptr;
}

std::string supported_architectures() {
  std::string s;
  for (const auto& r : kRecords)
    s += (s.empty() ? "" : ", ") + std::string(r.architectures[0]) + " (" + std::string(r.model_type) + ")";
  return s;
}

}  // namespace nsv
