#include "nsv/model.hpp"

namespace nsv {

std::string role_name(Role r) { return r == Role::column_parallel ? "column_parallel" : "row_parallel"; }

std::vector<MuonParam> llama_layer_params(const ModelDims& d) {
  const std::int64_t q = d.heads * d.head_dim, kv = d.kv_heads * d.head_dim;
  // q/k/v hold their heads on dim 0 and are split there by KV group (q by the KV groups its
  // heads belong to, so a rank's query heads match its KV heads under GQA). o_proj holds the
  // heads on dim 1 and is split there by the same groups. The MLP has no head structure.
  return {
      {"q_proj", q, d.hidden, Role::column_parallel, 0, d.heads, d.head_dim, d.kv_heads},
      {"k_proj", kv, d.hidden, Role::column_parallel, 0, d.kv_heads, d.head_dim, d.kv_heads},
      {"v_proj", kv, d.hidden, Role::column_parallel, 0, d.kv_heads, d.head_dim, d.kv_heads},
      {"o_proj", d.hidden, q, Role::row_parallel, 1, d.heads, d.head_dim, d.kv_heads},
      {"gate_proj", d.intermediate, d.hidden, Role::column_parallel, 0, 0, 0, 0},
      {"up_proj", d.intermediate, d.hidden, Role::column_parallel, 0, 0, 0, 0},
      {"down_proj", d.hidden, d.intermediate, Role::row_parallel, 1, 0, 0, 0},
  };
}

}  // namespace nsv
