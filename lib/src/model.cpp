#include "nsv/model.hpp"

#include <stdexcept>

namespace nsv {
namespace {

struct FusedName {
  FusedKind kind;
  std::string_view name;
};
// "qwen" is fusedqkv_utils.py's qwentype, cut by the glm rule (_transpose_fused_qkvw).
constexpr FusedName kFusedNames[] = {{FusedKind::glm, "glm"},         {FusedKind::glm, "qwen"},
                                     {FusedKind::phi3, "phi3"},       {FusedKind::bloom, "bloom"},
                                     {FusedKind::bigcode, "bigcode"}, {FusedKind::gate_up, "gate_up"}};

}  // namespace

std::string role_name(Role r) {
  switch (r) {
    case Role::column_parallel: return "column_parallel";
    case Role::row_parallel: return "row_parallel";
    case Role::replicated: return "replicated";
  }
  return "?";
}

std::string_view fused_kind_name(FusedKind k) {
  if (k == FusedKind::none) return "none";
  for (const auto& f : kFusedNames)
    if (f.kind == k) return f.name;
  return "?";
}

std::string fused_kind_names(std::string_view separator) {
  std::string out;
  for (const auto& f : kFusedNames) out += (out.empty() ? "" : std::string(separator)) + std::string(f.name);
  return out;
}

FusedKind parse_fused_kind(std::string_view s) {
  for (const auto& f : kFusedNames)
    if (f.name == s) return f.kind;
  throw std::invalid_argument("unknown fused layout '" + std::string(s) + "': expected one of " + fused_kind_names());
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
