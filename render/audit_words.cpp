// The audit's sentences: plan descriptions, the per-head note, the recommendation and the notes.
#include <algorithm>
#include <cmath>

#include "format.hpp"
#include "nsv/render/audit.hpp"

namespace nsv {

using render::fmt_count;
using render::fmt_pct;
using render::fmt_time;
using render::printf_format;
using render::ranks_text;

std::string_view plan_description(Plan p) {
  switch (p) {
    case Plan::shard: return "NS on each rank's shard (AutoTP today)";
    case Plan::gather: return "all-gather every matrix, NS of the whole on every rank";
    case Plan::owner: return "all-to-all each matrix to an owner rank (rotating), NS once, all-to-all back";
    case Plan::gram_allreduce: return "X stays sharded; one Gram all-reduce per NS step";
    case Plan::gram_restart_allreduce: return "X stays sharded; gram kernel with two Gram all-reduces";
    case Plan::per_head_shard: return "per-head NS on q/k/v (DeepSpeed per_head_muon), shard NS elsewhere";
    case Plan::cheapest_bit_identical: return "per matrix the faster of gather and owner";
    case Plan::cheapest_exact: return "per matrix the fastest strategy exact for whole (incl. all-reduce ones)";
    case Plan::per_head_cheapest_bit_identical: return "per-head NS on q/k/v, the faster of gather/owner elsewhere";
  }
  return "?";
}

std::string_view plan_semantics(Plan p) {
  switch (p) {
    case Plan::shard: return "none (depends on tp)";
    case Plan::per_head_shard: return "per_head on q/k/v, none elsewhere";
    case Plan::per_head_cheapest_bit_identical: return "per_head on q/k/v, whole elsewhere";
    default: return "whole";
  }
}

std::string_view plan_exactness(const PlanTotals& p) { return p.partial ? "partial" : promise_name(p.promise); }

std::string_view strategy_exactness(const StrategyAudit& s) {
  return s.applicable ? promise_name(s.promise) : "not_applicable";
}

namespace {
std::string part_names(const ParamAudit& pa) {
  std::string s;
  for (const auto& part : pa.parts) s += (s.empty() ? "" : "/") + part.part.name;
  return s;
}
}  // namespace

std::string per_head_note(const ParamAudit& pa) {
  if (!pa.per_head_applies) return pa.strategy(Strategy::per_head).why_not;
  const MuonParam& p = pa.param;
  std::string note =
      p.fused != FusedKind::none
          ? "every rank's pieces of " + part_names(pa) + " start and end on heads of " + std::to_string(p.head_dim) +
                " rows, so its shard is whole heads of the fused matrix"
          : "every rank holds whole heads (" + std::to_string(p.heads / p.kv_groups) + " " + (p.name == "q_proj" ? "query" : "KV") +
                " head(s) of " + std::to_string(p.head_dim) + " rows per KV group)";
  if (!pa.zero_width_ranks.empty()) note += "; vacuous on ranks " + ranks_text(pa.zero_width_ranks) + " (no heads)";
  return note;
}

namespace {

std::string overhead(const PlanChoice& p, const Recommendation& r) {
  return fmt_time(p.step_time_s) + " per optimizer step (" + (p.vs_shard_s >= 0 ? "+" : "-") + fmt_time(std::abs(p.vs_shard_s)) +
         " against today's shard path, " + fmt_time(r.shard_step_time_s) + ")";
}

std::string aspect_scale_list(const std::vector<AspectScaleShift>& shifts) {
  std::string s;
  for (const auto& a : shifts)
    s += std::string(s.empty() ? "" : ", ") + a.matrix + " " +
         (a.local_min == a.local_max ? printf_format("%.3g", a.local_min)
                                     : printf_format("%.3g", a.local_min) + ".." + printf_format("%.3g", a.local_max)) +
         " instead of " + printf_format("%.3g", a.global);
  return s;
}

std::string not_muon_text(const ModelConfig& model) {
  return "Not Muon matrices (SPEC §2.1): the embeddings (" + fmt_count(model.embedding_params()) +
         (model.dims.positions > 0 ? ", token and position" : "") + ")" +
         (model.dims.tie_word_embeddings ? ", lm_head tied to them" : ", lm_head (" + fmt_count(model.lm_head_params()) + ")") +
         ", norm weights (" + fmt_count(model.norm_params()) + ")" +
         (model.bias_params() ? ", biases (" + fmt_count(model.bias_params()) + ")" : std::string()) + ".";
}

std::string cost_model_text(const AuditOptions& o) {
  return "Costs: per rank and matrix, time = FLOPs / (" + printf_format("%g", o.cost.tflops) + " TFLOP/s) + messages x " +
         printf_format("%g", o.cost.latency_us) + " us + max(bytes sent, received) / (" + printf_format("%g", o.cost.link_gbps) +
         " GB/s); peak rates, so lower bounds, for comparing strategies. FLOPs: plain-algorithm count (every product "
         "2pkq). Communication: the simulated communicator's ledger (ring all-reduce; gathers and all-to-alls in " +
         std::string(dtype_name(o.comm.storage)) + ", Gram all-reduces in the compute dtype " + std::string(dtype_name(o.ns.dtype)) +
         "). A step sums each rank over all matrices and layers and takes the slowest rank; owner rotates the owning rank "
         "over the matrices.";
}

std::string fused_text(const AuditResult& a) {
  std::string s = "Fused projections are cut as AutoTP cuts them (" + std::string(a.model.family->autotp_rule) + " at DeepSpeed " +
                  std::string(kDeepSpeedCommit).substr(0, 10) + "):";
  for (const auto& pa : a.params) {
    if (pa.parts.empty()) continue;
    s += " " + pa.param.name + " (" + std::string(fused_kind_name(pa.param.fused)) + "): ";
    std::string mixed, replicated;
    for (const auto& part : pa.parts) {
      if (part.mixed_under_shard) mixed += (mixed.empty() ? "" : "/") + part.part.name;
      if (part.replicated) replicated += (replicated.empty() ? "" : "/") + part.part.name;
    }
    s += mixed.empty() ? "no rank holds pieces of two sub-matrices" : "a rank's shard holds pieces of " + mixed +
                                                                       ", which shard orthogonalizes together as one matrix";
    if (!replicated.empty()) s += "; " + replicated + " replicated on every rank";
    s += pa.per_head_applies ? "; per_head applies (whole heads on every rank)." : "; per_head does not apply (" + pa.strategy(Strategy::per_head).why_not + ").";
  }
  return s;
}

std::string experts_per_rank_text(const AuditResult& a) {
  for (const auto& pa : a.params) {
    if (!pa.expert_parallel) continue;
    const auto& n = pa.expert_parallel->experts_per_rank;
    const auto [lo, hi] = std::minmax_element(n.begin(), n.end());
    return (*lo == *hi ? std::to_string(*lo) : std::to_string(*lo) + "-" + std::to_string(*hi)) + " of the " +
           std::to_string(pa.param.copies) + " experts per rank";
  }
  return "";
}

std::string experts_text(const AuditResult& a) {
  const auto& e = *a.totals.experts;
  return "Routed experts (" + fmt_count(e.matrices_per_step) + " expert matrices per step): AutoTP shards every expert (w1/w3 "
         "or gate/up by rows, w2 or down by columns, grain rule) -- shard NS " + fmt_time(e.tensor_parallel_shard.step_time_s) +
         " per step (inexact), the faster of gather/owner per matrix " + fmt_time(e.tensor_parallel_exact.step_time_s) + " (" +
         render::fmt_bytes(double(e.tensor_parallel_exact.bytes_sent_max_rank)) + " sent by the busiest rank, bit-identical). Expert "
         "parallelism puts whole experts on the ranks (" + experts_per_rank_text(a) +
         "; each rank orthogonalizes the experts it holds): bit-identical to NS of each unsharded expert with no "
         "communication, " + fmt_time(e.expert_parallel.step_time_s) + " per step (" + fmt_count(e.expert_parallel.flops_max_rank) +
         " FLOPs on the busiest rank, 0 bytes). Today's DeepSpeed: " +
         (e.deepspeed == ExpertPlacement::expert_parallel
              ? "AutoEP places whole experts (expert parallelism) for this family with transformers >= 5 and Muon runs NS "
                "per expert (" + std::string(a.model.family->autotp_rule) + "); AutoTP's per-expert sharding is the path "
                "without AutoEP (transformers < 5 nn.Linear experts)."
              : "AutoTP's sharding.");
}

}  // namespace

std::string recommendation_text(const AuditResult& a) {
  const Recommendation& r = a.recommendation;
  if (r.nothing_to_choose)
    return "tp = 1: every strategy is the unsharded kernel; nothing to choose (" + fmt_time(r.shard_step_time_s) +
           " of NS per optimizer step).";
  std::string s = "To make Newton-Schulz independent of tp bit for bit, use " + std::string(plan_name(r.bit_identical.plan)) + ": " +
                  overhead(r.bit_identical, r) + " (with Muon's aspect scale taken from the unsharded shape, see the notes).";
  if (r.exact_arithmetic)
    s += " Accepting rounding-level differences (equal in exact arithmetic), " + std::string(plan_name(r.exact_arithmetic->plan)) +
         " is faster: " + overhead(*r.exact_arithmetic, r) + ".";
  s += " Per-head NS on q/k/v (a different optimizer: DeepSpeed's per_head_muon) makes " + fmt_pct(r.per_head_fraction_params) +
       " of the Muon parameters (" + fmt_pct(r.per_head_fraction_flops) +
       " of the NS FLOPs) tp-independent with no communication; with the faster of gather/owner for the rest: " +
       overhead(r.per_head_mixed, r) + ".";
  return s;
}

std::string note_text(const AuditNote& n, const AuditResult& a) {
  const ModelDims& d = a.model.dims;
  const AuditOptions& o = a.options;
  switch (n.kind) {
    case AuditNoteKind::zero_width_ranks:
      return "tp = " + std::to_string(o.tp) + " exceeds num_key_value_heads = " + std::to_string(d.kv_heads) +
             ": under the head-aligned rule ranks " + ranks_text(n.ranks) +
             " get zero KV groups and hold no q/k/v rows and no o_proj columns (zero-width shards). For them `shard` and "
             "`per_head` are vacuous (nothing to orthogonalize; their Muon update is empty); gather and owner still work "
             "(they receive or send nothing of their own and the ranks holding heads get the exact result); the all-reduce "
             "strategies still involve them (a zero Gram contribution, and the replicated polynomial work). DeepSpeed's "
             "get_shard_size gives such ranks 0 KV groups too; DeepSpeed has no KV-head replication for this case, and "
             "deepspeedai/DeepSpeed#7259 reports AutoTP training failing on Qwen2.5-3B (2 KV heads) at tp > 2, with the "
             "maintainers' advice to keep num_key_value_heads divisible by tp. Treat this configuration as a what-if of the "
             "shard rule, not a supported DeepSpeed run.";
    case AuditNoteKind::uneven_attention:
      return "tp = " + std::to_string(o.tp) + " does not divide the " + std::to_string(d.autotp_kv_heads) +
             " KV heads AutoTP splits the attention by: the head-aligned attention shards are uneven (the first ranks "
             "hold one KV group more).";
    case AuditNoteKind::fused_projection: return fused_text(a);
    case AuditNoteKind::replicated_matrix:
      return "AutoTP leaves the router (and a shared-expert gate) unsharded: every rank holds the whole matrix and its "
             "whole gradient, so every rank's own NS is NS of the whole matrix, bit-identical, with nothing sent (shard is "
             "exact for it; the all-reduce strategies do not apply, they would count the copies tp times).";
    case AuditNoteKind::routed_experts: return experts_text(a);
    case AuditNoteKind::local_aspect_scale:
      return "Muon's aspect scale sqrt(rows/cols) (rows > cols) is computed by DeepSpeed from the shard under AutoTP: at tp = " +
             std::to_string(o.tp) + " it is " + aspect_scale_list(n.aspect_scales) +
             ". That factor depends on tp by itself (SPEC §4 M2) and no NS strategy removes it: for a tp-independent "
             "update, gather/owner/all-reduce must go with the scale of the unsharded shape (per_head scales each head "
             "block itself and is unaffected).";
    case AuditNoteKind::qkv_bias:
      return "q/k/v (" + a.model.model_type + ") carry bias vectors: 1-D (ndim < 2), so not Muon matrices; Muon leaves them to "
             "its AdamW fallback. They are counted among the non-Muon parameters.";
    case AuditNoteKind::not_muon_matrices: return not_muon_text(a.model);
    case AuditNoteKind::grain_rule:
      // The option's name as the command line spells it: the note explains `nsv audit --grain`.
      return "--grain " + std::to_string(o.grain) + " applies to the grain-rule matrices (the MLP and expert matrices); the "
             "attention matrices follow the head-aligned rule where their head count divides them.";
    case AuditNoteKind::exactness:
      return "Exactness: gather and owner are bit-identical to NS of the unsharded matrix (`whole`); gram_allreduce and "
             "gram_restart_allreduce equal it in exact arithmetic and differ at the kernel's own rounding level in floating "
             "point (SPEC §4 S5); per_head is bit-identical to per-head NS of the unsharded matrix, a different optimizer; "
             "shard is NS of the shard, a different matrix whenever more than one rank holds a piece.";
    case AuditNoteKind::cost_model: return cost_model_text(o);
    case AuditNoteKind::shard_divergence:
      return "Shard divergence: ||NS(shard) - block of NS(whole)||_F / ||block of NS(whole)||_F on a Gaussian gradient, mean "
             "(max) over ranks holding a piece; matrices above " + fmt_count(o.measure_max_elements) +
             " elements are measured on a proxy with every length divided by the same factor (same aspect ratio, "
             "heads, KV groups and shard proportions).";
  }
  return "?";
}

}  // namespace nsv
