#pragma once
// The Muon matrices of a decoder layer and their AutoTP roles (SPEC §2.1). Which matrices a
// family has, and how AutoTP cuts each, is in the family's record (architectures.hpp).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nsv {

// The dimensions that fix a model's matrix shapes (read from a Hugging Face config.json by
// model_config.hpp; the fields a family does not have stay 0).
struct ModelDims {
  std::string name;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t intermediate = 0;
  std::int64_t layers = 1;
  std::int64_t vocab = 0;
  bool tie_word_embeddings = false;
  // The num_kv_heads AutoTP reads from the config (auto_tp.py get_model_num_kv_heads): the head
  // count its head-aligned rule splits by. The model's own KV heads for every family but Falcon,
  // whose config attribute says num_attention_heads while its multi-query attention has one.
  std::int64_t autotp_kv_heads = 0;
  std::int64_t experts = 0;                  // routed experts per layer (0: a dense MLP)
  std::int64_t expert_intermediate = 0;      // each routed expert's MLP width
  std::int64_t shared_expert_intermediate = 0;  // Qwen2-MoE's shared expert (0: none)
  std::int64_t positions = 0;                // learned position embeddings (GPT-BigCode's wpe; 0: none)
};

enum class Role {
  column_parallel,  // split along dim 0 (out)
  row_parallel,     // split along dim 1 (in)
  replicated,       // every rank holds the whole matrix (AutoTP skips it: MoE routers)
};
std::string role_name(Role);

// How a fused projection's sub-matrices lie along dim 0 and how AutoTP cuts them
// (deepspeed/module_inject/fusedqkv_utils.py, layers.py GateUpPack_LinearLayer).
enum class FusedKind {
  none,
  glm,      // [Q;K;V] concatenated, each part split by get_shard_size_list, a rank's pieces re-concatenated
  phi3,     // the same cut, with Q's size from the KV heads (Phi-3's qkv_proj)
  bloom,    // the fused rows split contiguously as one dimension (the layout is per head or per group)
  bigcode,  // [Q;K;V] with one KV head: Q split, K and V replicated on every rank
  gate_up,  // [gate;up]: each half split by the grain rule, a rank's halves re-concatenated
};
// "none" | "glm" | "phi3" | "bloom" | "bigcode" | "gate_up" (the audit's words). As a user names
// them (none, qkv:glm, qkv:qwen, ..., gate_up): the schema's table (nsv/config_schema.hpp).
std::string_view fused_kind_name(FusedKind);

// A sub-matrix of a fused projection: its rows along dim 0, in storage order.
struct SubMatrix {
  std::string name;  // q, k, v; gate, up
  std::int64_t rows = 0;
  bool has_heads = true;  // rows are whole heads of head_dim (q/k/v), not an MLP half
};

// One Muon matrix [rows = out, cols = in] of a layer.
struct MuonParam {
  std::string name;          // q_proj, k_proj, ..., qkv_proj, experts.w1, ...
  std::int64_t rows = 0, cols = 0;
  Role role = Role::column_parallel;
  int split_axis = 0;        // 0 for column-parallel, 1 for row-parallel (and replicated)
  std::int64_t heads = 0;    // heads laid along the split axis (0: no head structure)
  std::int64_t head_dim = 0;
  // The head count AutoTP's get_shard_size splits this matrix by when it divides the split axis
  // (the model's num_kv_heads global); 0: the grain rule (MLP and MoE names, tp_shard.py:64,78).
  std::int64_t kv_groups = 0;
  FusedKind fused = FusedKind::none;
  std::vector<SubMatrix> parts{};  // fused: the sub-matrices along dim 0, in storage order
  std::int64_t copies = 1;       // matrices of this shape per layer (routed experts: their count)
  bool expert = false;           // a routed expert: expert parallelism can place it whole on a rank

  std::int64_t elements() const { return rows * cols; }
  std::int64_t elements_per_layer() const { return rows * cols * copies; }
  bool heads_on_rows() const { return heads > 0 && split_axis == 0; }
};

// The seven Muon matrices of a Llama-family decoder layer: q/k/v/o_proj, gate/up/down_proj.
std::vector<MuonParam> llama_layer_params(const ModelDims&);

}  // namespace nsv
