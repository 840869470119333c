#include "nsv/model.hpp"

#include "nsv/config_schema.hpp"

namespace nsv {
namespace {

// As a user names a fused kind (nsv --fused, the sweep CSV's fused column): the [Q;K;V] kinds
// behind "qkv:". "qkv:qwen" is fusedqkv_utils.py's qwentype, cut by the glm rule
// (_transpose_fused_qkvw).
constexpr std::string_view kQkvPrefix = "qkv:";
constexpr NamedValue<FusedKind> kFusedNames[] = {{FusedKind::none, "none"},           {FusedKind::glm, "qkv:glm"},
                                                 {FusedKind::glm, "qkv:qwen"},        {FusedKind::phi3, "qkv:phi3"},
                                                 {FusedKind::bloom, "qkv:bloom"},     {FusedKind::bigcode, "qkv:bigcode"},
                                                 {FusedKind::gate_up, "gate_up"}};
constexpr NameTable<FusedKind> kFusedTable{"fused", kFusedNames};

}  // namespace

const NameTable<FusedKind>& name_table(std::type_identity<FusedKind>) { return kFusedTable; }

std::string role_name(Role r) {
  switch (r) {
    case Role::column_parallel: return "column_parallel";
    case Role::row_parallel: return "row_parallel";
    case Role::replicated: return "replicated";
  }
  return "?";
}

std::string_view fused_kind_name(FusedKind k) {
  std::string_view name = name_of(k);
  if (name.starts_with(kQkvPrefix)) name.remove_prefix(kQkvPrefix.size());
  return name;
}

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
