// An audit as markdown (nsv report's per-model audits): tables, the recommendation, the notes.
#include <fmt/format.h>
#include <iterator>
#include <string>

#include "audit_cells.hpp"
#include "format.hpp"
#include "nsv/render/audit.hpp"

namespace nsv {
namespace {

using namespace render;

std::string cheapest_cell(const ParamAudit& pa) {
  std::string cell = pa.cheapest_exact ? audit_short_name(*pa.cheapest_exact) : "-";
  if (pa.cheapest_bit_identical && pa.cheapest_exact && *pa.cheapest_bit_identical != *pa.cheapest_exact)
    cell += " (bit-identical: " + audit_short_name(*pa.cheapest_bit_identical) + ")";
  return cell;
}

std::string matrices_table(const AuditResult& a) {
  const bool measured = a.options.measure;
  std::string out = "### Muon matrices of one layer\n\n";
  out += "| matrix | shape | role | shard sizes | exact for `whole` | exact for `per_head` | cheapest exact (whole) |" +
         std::string(measured ? " `shard` NS rel. diff mean (max), update mean |" : "") + "\n";
  out += "|---|---|---|---|---|---|---|" + std::string(measured ? "---|" : "") + "\n";
  for (const auto& pa : a.params) {
    const auto& p = pa.param;
    out += "| " + p.name + " | " + shape_text(p) + " | " + role_text(p) + " | " + sizes_text(pa.shard_sizes) + " | " +
           exact_list(pa, Target::whole) + " | " +
           (pa.per_head_applies ? "per_head" : "n/a") + " | " + cheapest_cell(pa) + " |";
    if (measured) out += fmt::format(" {} |", divergence_cell(pa));
    out += "\n";
  }
  return out + "\n\\* equal in exact arithmetic; rounding-level differences in floating point.\n";
}

std::string yes_no(bool b) { return b ? "yes" : "no"; }

// Per sub-matrix of each fused matrix: where AutoTP puts its rows and what that means for shard
// and per_head (gather, owner and the all-reduce strategies are exact for every sub-matrix as for
// the whole matrix).
std::string fused_table(const AuditResult& a) {
  std::string out;
  for (const auto& pa : a.params) {
    if (pa.parts.empty()) continue;
    if (out.empty())
      out = "### Fused projections, per sub-matrix\n\n| matrix | sub-matrix | rows | rows per rank | replicated | whole heads "
            "on every rank | shard mixes it with another sub-matrix | per_head |\n|---|---|---|---|---|---|---|---|\n";
    for (const auto& s : pa.parts)
      out += "| " + pa.param.name + " (" + std::string(fused_kind_name(pa.param.fused)) + ") | " + s.part.name + " | [" +
             std::to_string(s.begin) + ", " + std::to_string(s.begin + s.part.rows) + ") | " + sizes_text(s.rows_per_rank) + " | " +
             yes_no(s.replicated) + " | " + (s.part.has_heads ? yes_no(s.whole_heads) : "no heads") + " | " +
             yes_no(s.mixed_under_shard) + " | " + (pa.per_head_applies ? "exact" : "n/a") + " |\n";
  }
  return out.empty() ? out : out + "\n";
}

// The routed experts over a step: AutoTP's sharding against expert parallelism.
std::string experts_table(const AuditTotals& t) {
  if (!t.experts) return "";
  const ExpertTotals& e = *t.experts;
  std::string out = "### Routed experts over one step (" + fmt_count(e.matrices_per_step) + " expert matrices)\n\n";
  out += "| placement | exactness | est. step time | NS FLOPs (busiest rank) | bytes sent (busiest rank) | today's DeepSpeed |\n"
         "|---|---|---|---|---|---|\n";
  auto row = [&](const char* name, const PlanTotals& p, bool today) {
    out += std::string("| ") + name + " | " + std::string(promise_name(p.promise)) + " | " + fmt_time(p.step_time_s) + " | " +
           fmt_count(static_cast<std::int64_t>(p.flops_max_rank)) + " | " + fmt_bytes(double(p.bytes_sent_max_rank)) + " | " +
           (today ? "yes" : "") + " |\n";
  };
  const bool ep = e.deepspeed == ExpertPlacement::expert_parallel;
  row("tensor-parallel experts, shard NS (AutoTP)", e.tensor_parallel_shard, !ep);
  row("tensor-parallel experts, gather/owner", e.tensor_parallel_exact, false);
  row("expert parallelism (whole experts per rank)", e.expert_parallel, ep);
  return out + "\n";
}

std::string time_table(const AuditResult& a) {
  std::string out = "### Estimated time per matrix\n\n| matrix |";
  for (Strategy s : kAllStrategies) out += fmt::format(" {} |", strategy_name(s));
  out += "\n|---|";
  for (std::size_t i = 0; i < std::size(kAllStrategies); ++i) out += "---|";
  out += "\n";
  for (const auto& pa : a.params) {
    out += "| " + pa.param.name + " |";
    for (Strategy s : kAllStrategies) {
      const auto& st = pa.strategy(s);
      const std::uint64_t b = busiest_sent(st);
      out += fmt::format(" {} |", st.applicable ? fmt_time(st.step_share_s) + (b ? " / " + fmt_bytes(double(b)) : "") : "n/a");
    }
    out += "\n";
  }
  return out + "\nPer matrix and layer: estimated time (the slowest rank's; owner: the mean over ranks, as the owner rotates "
               "over the matrices of a step) / bytes sent by the busiest rank.\n";
}

std::string step_table(const AuditTotals& t) {
  std::string out = "### One optimizer step (" + std::to_string(t.layers) + " layers)\n\n";
  out += "Muon parameters: " + fmt_count(t.muon_params) + " (" + fmt_count(t.muon_params_per_layer) + " per layer) of " +
         fmt_count(t.total_params) + ". Per-head can make exact " + fmt_pct(t.per_head_exact_fraction_params) +
         " of the Muon parameters and " + fmt_pct(t.per_head_exact_fraction_flops) + " of the NS FLOPs.\n\n";
  out += "| plan | exactness | est. step time | bytes sent (busiest rank) | bytes sent (all ranks) | peak extra memory |\n";
  out += "|---|---|---|---|---|---|\n";
  for (const auto& p : t.plans)
    out += "| " + std::string(plan_name(p.plan)) + " | " + std::string(plan_exactness(p)) + " | " + fmt_time(p.step_time_s) + " | " +
           fmt_bytes(double(p.bytes_sent_max_rank)) + " | " + fmt_bytes(double(p.bytes_sent_total)) + " | " +
           fmt_bytes(double(p.peak_extra_memory)) + " |\n";
  return out;
}

}  // namespace

std::string audit_markdown(const AuditResult& a) {
  const AuditOptions& o = a.options;
  std::string out = "## " + a.model.dims.name + " at tp = " + std::to_string(o.tp) +
                    (o.grain > 1 ? ", grain " + std::to_string(o.grain) : std::string()) + "\n\n";
  out += header_line(a) + ".\n\n" + matrices_table(a) + "\n" + fused_table(a) + time_table(a) + "\n" + step_table(a.totals);
  if (a.totals.experts) out += "\n" + experts_table(a.totals);
  out += "\n**Recommendation.** " + recommendation_text(a) + "\n\n";
  for (const auto& n : a.notes) out += "- " + note_text(n, a) + "\n";
  if (a.mesh) out += "\n" + mesh_audit_markdown(*a.mesh);
  return out + "\n";
}

}  // namespace nsv
