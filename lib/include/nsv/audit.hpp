#pragma once
// `nsv audit`: what tensor parallelism does to Muon for a Hugging Face Llama-family model
// (SPEC §6). For each Muon matrix of a decoder layer: its AutoTP role and shard sizes, which
// strategies are exact for it under each target semantics, what each strategy costs on each rank
// (cost_model.hpp), optionally the measured divergence of today's `shard` path, and the cheapest
// exact strategy; then whole-model totals per optimizer step (x num_hidden_layers) and a
// recommendation. `nsv report` renders the same result through audit_markdown / audit_json.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "nsv/backend.hpp"
#include "nsv/cost_model.hpp"
#include "nsv/layout.hpp"
#include "nsv/model_config.hpp"
#include "nsv/strategies.hpp"

namespace nsv {

struct AuditOptions {
  int tp = 8;
  std::int64_t grain = 1;  // tp_grain_size of the grain rule: 1 training, 64 inference
  NsConfig ns = [] {       // DeepSpeed on a GPU: the gram kernel, computed in fp16 (SPEC §1.5)
    NsConfig c;
    c.dtype = DType::fp16;
    return c;
  }();
  CostParams cost;
  StrategyOptions comm;  // wire dtype of gathers and all-to-alls: fp32 (DeepSpeed's update)
  bool measure = false;
  // Measure on the gradient's own shape up to this many elements, beyond it on a scaled-down
  // proxy with the same aspect ratio and head layout.
  std::int64_t measure_max_elements = std::int64_t{1} << 21;  // 2,097,152
  std::uint64_t seed = 0;
  const Backend* backend = nullptr;  // for --measure; the CPU reference when null
  std::function<void()> on_measured;  // called after each measured matrix (progress display)

  void validate() const;
};

// How a strategy's result relates to a target semantics.
enum class Exactness {
  bit_identical,     // equal bit for bit (gather, owner vs whole; per_head vs per_head)
  exact_arithmetic,  // equal in exact arithmetic, rounding-level differences in floating point
  inexact,           // a different result (shard: NS of the shard)
  not_applicable,    // the strategy cannot run on this matrix / the target does not exist for it
};
std::string_view exactness_name(Exactness);

struct StrategyAudit {
  Strategy strategy = Strategy::shard;
  Target target = Target::whole;  // the semantics it is exact for (its natural target)
  Exactness exactness = Exactness::inexact;
  bool applicable = true;
  std::string why_not;            // when not applicable
  StrategyPlan plan;              // empty when not applicable
  std::vector<RankCost> ranks;
  double time_s = 0;              // slowest rank
  // owner only: rank costs when rank o owns the matrix (by_owner[o][r]); `ranks` is by_owner[0],
  // run_strategy's choice.
  std::vector<std::vector<RankCost>> by_owner;
  // What the matrix adds to an optimizer step: the slowest rank's time, except for owner, whose
  // owning rank rotates over the matrices of a step: the mean over owners and ranks. The cheapest
  // strategy of a matrix is chosen by this.
  double step_share_s = 0;
};

struct ShardDivergence {
  bool proxy = false;        // measured on a scaled-down proxy (false: on the full shape)
  bool proxy_exact_ratio = true;  // the proxy's dims are the full dims divided by `scale` exactly
  std::int64_t scale = 1;    // full dims / proxy dims
  // The proxy's first NS step divides its input by this (sqrt(scale)), so that its
  // normalized singular values follow the full-size matrix's distribution (see audit.cpp).
  double spectrum_scale = 1;
  std::int64_t rows = 0, cols = 0, head_dim = 0;  // what was measured
  std::vector<std::int64_t> shard_sizes;          // the proxy's shards under the same rules
  double rel_diff_mean = 0, rel_diff_max = 0;     // over ranks holding a non-empty shard
  std::vector<double> rank_rel_diff;              // per rank (0 for empty shards)
  double cosine_min = 1;
  // The same after Muon's aspect scale sqrt(rows/cols) when rows > cols (SPEC §1.4), computed as
  // DeepSpeed does under AutoTP from the shard's shape, against the unsharded update's block
  // scaled from the whole shape: the difference in the update Muon applies.
  double update_rel_diff_mean = 0, update_rel_diff_max = 0;
  double seconds = 0;
};

// NS of the shard vs the matching block of NS of the whole, on a Gaussian gradient of the
// matrix's shape, or, when rows*cols > max_elements, of a proxy: every length divided by one
// factor f (same aspect ratio, heads, KV groups, shard proportions), its first NS step prescaled
// so that its normalized singular values follow the full-size distribution.
// match_spectrum = false gives the plain proxy (for showing why the matching is needed).
ShardDivergence measure_shard_divergence(const MuonParam&, int tp, std::int64_t grain, const NsConfig&,
                                         std::int64_t max_elements, std::uint64_t seed, const Backend&,
                                         bool match_spectrum = true);

struct ParamAudit {
  MuonParam param;
  Layout layout;
  std::vector<std::int64_t> shard_sizes;  // along the split axis, per rank
  std::vector<int> zero_width_ranks;
  bool per_head_applies = false;
  std::string per_head_note;              // why not, or what it covers
  std::vector<StrategyAudit> strategies;  // in kAllStrategies order
  std::uint64_t whole_ns_flops = 0;       // NS of the unsharded matrix (plain convention)
  // Muon's aspect scale sqrt(rows/cols) when rows > cols (SPEC §1.4): from the unsharded shape,
  // and from each rank's shard as DeepSpeed computes it under AutoTP (0 for an empty shard).
  double scale_global = 1;
  std::vector<double> scale_local;
  // Cheapest by estimated time (slowest rank) among the strategies exact for `whole`:
  std::optional<Strategy> cheapest_bit_identical;  // gather or owner
  std::optional<Strategy> cheapest_exact;          // also counting the exact-arithmetic ones
  std::optional<ShardDivergence> divergence;       // with --measure

  const StrategyAudit& strategy(Strategy) const;
};

// One choice of strategy per matrix, summed over an optimizer step (all layers).
struct PlanTotals {
  std::string name;         // e.g. "gather", "per_head+cheapest_bit_identical"
  std::string description;
  std::string semantics;    // whole | per_head attention, whole elsewhere | none (today's shard)
  std::string exactness;    // bit_identical | exact_arithmetic | inexact | partial
  std::vector<Strategy> choice;  // per matrix of the layer
  double step_time_s = 0;        // slowest rank's sum (see audit.cpp for the model)
  double compute_s = 0, latency_s = 0, bandwidth_s = 0;  // of that rank
  std::uint64_t bytes_sent_max_rank = 0, bytes_sent_total = 0, messages_max_rank = 0, flops_max_rank = 0;
  std::uint64_t peak_extra_memory = 0;  // largest single-matrix extra buffer on any rank
};

struct AuditTotals {
  std::int64_t layers = 0;
  std::int64_t muon_params_per_layer = 0, muon_params = 0;
  std::int64_t total_params = 0, non_muon_params = 0;
  std::int64_t per_head_params = 0;  // in matrices per-head can make exact at this tp
  double per_head_exact_fraction_params = 0, per_head_exact_fraction_flops = 0;
  std::uint64_t ns_flops_whole_per_step = 0;  // unsharded NS of every Muon matrix, all layers
  std::vector<PlanTotals> plans;  // the uniform strategies first (kAllStrategies order, per_head
                                  // only over the matrices it applies to), then the mixed plans
};

struct AuditResult {
  ModelConfig model;
  AuditOptions options;
  std::vector<ParamAudit> params;
  AuditTotals totals;
  std::string recommendation;
  std::vector<std::string> notes;
};

AuditResult run_audit(const ModelConfig&, const AuditOptions&);

// Stable schema "nsv.audit/1" (fields are only ever added):
//   schema, tp, grain, measured
//   model       {name, source, architecture, model_type, hidden_size, num_attention_heads,
//                num_key_value_heads, head_dim, intermediate_size, num_hidden_layers, vocab_size,
//                tie_word_embeddings, qkv_bias}
//   ns          {kernel, steps, dtype, accumulate, coeffs, restart_at}
//   cost_model  {latency_us, link_gbps, tflops, wire_dtype, formula}
//   parameters[] one per Muon matrix of a layer, in q, k, v, o, gate, up, down order:
//     name, rows, cols, elements, role (column_parallel | row_parallel), split_axis, heads,
//     head_dim, kv_groups, shard_rule (head_aligned | grain), shard_sizes[tp],
//     zero_width_ranks[], per_head_applies, per_head_note, whole_ns_flops,
//     aspect_scale {global, local[tp]},
//     exact_strategies[] {strategy, target (whole | per_head),
//                         exactness (bit_identical | exact_in_exact_arithmetic)},
//     strategies {<strategy>: {target, exactness, applicable, why_not | (time_s, step_share_s,
//                 collectives {all_gather, all_reduce, all_to_all, broadcast},
//                 ranks[tp] {rank, flops, bytes_sent, bytes_received, messages,
//                            extra_memory_bytes, compute_s, latency_s, bandwidth_s, time_s})}},
//     cheapest_exact {bit_identical, any, per_head} (strategy names or null),
//     shard_divergence null | {rel_diff_mean, rel_diff_max, rank_rel_diff[], cosine_min,
//                 update_rel_diff_mean, update_rel_diff_max, measured_on (full_shape | proxy),
//                 proxy_scale, proxy_exact_ratio, proxy_spectrum_scale, rows, cols, head_dim,
//                 shard_sizes[], spectrum, seconds}
//   totals      {layers, muon_params_per_layer, muon_params, total_params, non_muon_params,
//                per_head_params, per_head_exact_fraction_params, per_head_exact_fraction_flops,
//                ns_flops_whole_per_step,
//                step_time_s {<plan>: seconds}   (the figure of step time per strategy vs tp),
//                plans[] {name, description, semantics, exactness, choice[7], step_time_s,
//                         compute_s, latency_s, bandwidth_s, bytes_sent_max_rank,
//                         bytes_sent_total, messages_max_rank, flops_max_rank,
//                         peak_extra_memory_bytes}}
//   recommendation (text), notes[] (text)
// Plans: shard, gather, owner, gram_allreduce, gram_restart_allreduce (one strategy for every
// matrix), per_head+shard, cheapest_bit_identical, cheapest_exact, per_head+cheapest_bit_identical.
nlohmann::json audit_json(const AuditResult&);
std::string audit_markdown(const AuditResult&);
std::string audit_text(const AuditResult&, bool per_rank = false);

}  // namespace nsv
