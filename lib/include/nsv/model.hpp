#pragma once
// The Muon matrices of a Llama-family decoder layer and their AutoTP roles (SPEC §2.1).
#include <cstdint>
#include <string>
#include <vector>

namespace nsv {

// The dimensions that fix a Llama-family model's matrix shapes (read from a Hugging Face
// config.json by model_config.hpp).
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
};

enum class Role { column_parallel, row_parallel };
std::string role_name(Role);

// One Muon matrix [rows = out, cols = in] of a layer.
struct MuonParam {
  std::string name;          // q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj
  std::int64_t rows = 0, cols = 0;
  Role role = Role::column_parallel;
  int split_axis = 0;        // 0 for column-parallel, 1 for row-parallel
  std::int64_t heads = 0;    // heads laid along the split axis (0: no head structure)
  std::int64_t head_dim = 0;
  std::int64_t kv_groups = 0;  // KV groups that drive the head-aligned shard rule (0: grain rule)

  std::int64_t elements() const { return rows * cols; }
  bool heads_on_rows() const { return heads > 0 && split_axis == 0; }
};

// The seven Muon matrices of one decoder layer, in the order above.
std::vector<MuonParam> llama_layer_params(const ModelDims&);

}  // namespace nsv
