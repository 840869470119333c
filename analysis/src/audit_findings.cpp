// What the audit concludes beyond its tables: the recommended plans and the notes, as data (the
// words are render/'s).
#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "audit_stages.hpp"

namespace nsv::audit_stages {
namespace {

// The fastest of `candidates`, against the shard plan.
PlanChoice fastest(const AuditTotals& t, std::initializer_list<Plan> candidates) {
  const PlanTotals* best = nullptr;
  for (Plan p : candidates)
    if (!best || t.plan(p).step_time_s < best->step_time_s) best = &t.plan(p);
  return {best->plan, best->step_time_s, best->step_time_s - t.plan(Plan::shard).step_time_s};
}

PlanChoice choice_of(const AuditTotals& t, Plan p) { return fastest(t, {p}); }

// The matrices whose shard-local aspect scale (DeepSpeed under AutoTP) is not the whole's.
std::vector<AspectScaleShift> aspect_scale_shifts(const std::vector<ParamAudit>& params) {
  std::vector<AspectScaleShift> shifts;
  for (const auto& pa : params) {
    double lo = 0, hi = 0;
    for (double s : pa.scale_local)
      if (s > 0) lo = lo == 0 ? s : std::min(lo, s), hi = std::max(hi, s);
    if (hi == 0 || (std::abs(lo - pa.scale_global) < 1e-12 && std::abs(hi - pa.scale_global) < 1e-12)) continue;
    shifts.push_back({pa.param.name, lo, hi, pa.scale_global});
  }
  return shifts;
}

}  // namespace

Recommendation recommend(const AuditTotals& t, int tp) {
  Recommendation r;
  r.nothing_to_choose = tp == 1;
  r.shard_step_time_s = t.plan(Plan::shard).step_time_s;
  r.bit_identical = fastest(t, {Plan::gather, Plan::owner, Plan::cheapest_bit_identical});
  const PlanChoice arithmetic = fastest(t, {Plan::gram_allreduce, Plan::gram_restart_allreduce, Plan::cheapest_exact});
  if (arithmetic.step_time_s < r.bit_identical.step_time_s) r.exact_arithmetic = arithmetic;
  r.per_head_mixed = choice_of(t, Plan::per_head_cheapest_bit_identical);
  r.per_head_fraction_params = t.per_head_exact_fraction_params;
  r.per_head_fraction_flops = t.per_head_exact_fraction_flops;
  return r;
}

std::vector<AuditNote> audit_notes(const ModelConfig& model, const std::vector<ParamAudit>& params, const AuditOptions& o) {
  std::vector<AuditNote> notes;
  const auto& q = params[0];  // the attention shards: q_proj's
  if (!q.zero_width_ranks.empty())
    notes.push_back({AuditNoteKind::zero_width_ranks, q.zero_width_ranks, {}});
  else if (model.dims.kv_heads % o.tp != 0)
    notes.push_back({AuditNoteKind::uneven_attention, {}, {}});
  if (auto shifts = aspect_scale_shifts(params); !shifts.empty())
    notes.push_back({AuditNoteKind::local_aspect_scale, {}, std::move(shifts)});
  if (model.qkv_bias) notes.push_back({AuditNoteKind::qkv_bias, {}, {}});
  auto any = [&](auto pred) { return std::any_of(params.begin(), params.end(), pred); };
  if (any([](const ParamAudit& pa) { return !pa.parts.empty(); })) notes.push_back({AuditNoteKind::fused_projection, {}, {}});
  if (any([](const ParamAudit& pa) { return pa.param.role == Role::replicated; }))
    notes.push_back({AuditNoteKind::replicated_matrix, {}, {}});
  if (any([](const ParamAudit& pa) { return pa.param.expert; })) notes.push_back({AuditNoteKind::routed_experts, {}, {}});
  notes.push_back({AuditNoteKind::not_muon_matrices, {}, {}});
  if (o.grain > 1) notes.push_back({AuditNoteKind::grain_rule, {}, {}});
  notes.push_back({AuditNoteKind::exactness, {}, {}});
  notes.push_back({AuditNoteKind::cost_model, {}, {}});
  if (o.measure) notes.push_back({AuditNoteKind::shard_divergence, {}, {}});
  return notes;
}

}  // namespace nsv::audit_stages
