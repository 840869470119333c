#pragma once
// `nsv audit`: what tensor parallelism does to Muon for a Hugging Face model of a known family
// (SPEC §6; the families: nsv/analysis/architectures.hpp). For each Muon matrix of a decoder layer: its
// AutoTP role and shard sizes (a fused matrix per sub-matrix), which strategies are exact for it
// under each target semantics, what each strategy costs on each rank (cost_model.hpp), for routed
// experts also expert parallelism, optionally the measured divergence of today's `shard` path
// (proxy_measurement.hpp), and the cheapest exact strategy; then whole-model totals per optimizer
// step (x num_hidden_layers), a recommendation and notes, all as data. The words, tables and the
// JSON (schema nsv.audit/1) are rendered outside the library (render/: nsv/render/audit.hpp).
//
// Sources: audit.cpp (run_audit), audit_strategy.cpp (one matrix), audit_totals.cpp (plans over
// a step), audit_findings.cpp (recommendation and notes), proxy_measurement.cpp.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nsv/backend.hpp"
#include "nsv/cost_model.hpp"
#include "nsv/layout.hpp"
#include "nsv/analysis/mesh_audit.hpp"
#include "nsv/analysis/model_config.hpp"
#include "nsv/analysis/proxy_measurement.hpp"
#include "nsv/strategies.hpp"
#include "nsv/strategy.hpp"

namespace nsv {

struct AuditOptions {
  int tp = 8;
  // The data-parallel degree of a TP x DP mesh and how it partitions each TP shard (mesh.hpp); at
  // dp > 1 the audit adds the mesh strategies (mesh_audit.hpp).
  int dp = 1;
  DpPartition dp_partition = DpPartition::zero;
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
  const Backend* backend = nullptr;  // for the measurement; the CPU reference when null
  std::function<void()> on_measured;  // called after each measured matrix (progress display)

  // Throws nsv::InvalidField naming the field (tp, dp, grain, measure_max_elements, or one of
  // ns's and cost's).
  void validate() const;
};

struct StrategyAudit {
  Strategy strategy = Strategy::shard;
  Target target = Target::whole;  // the semantics it is exact for (its natural target)
  bool applicable = true;
  // Against `target` on this matrix's layout (promise_on); Promise::none when not applicable.
  Promise promise = Promise::none;
  std::string why_not;            // when not applicable
  StrategyPlan plan;              // empty when not applicable
  std::vector<RankCost> ranks;
  double time_s = 0;              // slowest rank
  // owner only: rank r's costs when it owns the matrix (as_owner[r]) and when another rank does
  // (as_member[r]). Every rank sends its shard to the owner and gets it back, so what a rank pays
  // depends on the owner only through whether it is the owner (audit_strategy.cpp checks this on
  // every owner's plan); `ranks` is owner 0's, run_strategy's choice.
  std::vector<RankCost> as_owner, as_member;
  // What the matrix adds to an optimizer step: the slowest rank's time, except for owner, whose
  // owning rank rotates over the matrices of a step: the mean over owners and ranks. The cheapest
  // strategy of a matrix is chosen by this.
  double step_share_s = 0;

  // Applicable and exact for its target (bit-identical or in exact arithmetic).
  bool exact() const { return applicable && promise != Promise::none; }
};

// One sub-matrix of a fused projection (Q, K, V; gate, up) under AutoTP's cut of the fused matrix.
struct SubMatrixAudit {
  SubMatrix part;
  std::int64_t begin = 0;                    // its first row in the fused matrix
  std::vector<std::int64_t> rows_per_rank;   // how many of its rows each rank holds
  bool replicated = false;                   // every rank holds all of it (bigcode's K, V)
  // Every rank's piece is whole heads of head_dim rows starting on a head boundary (only for a
  // part with heads): per-head NS of the rank's shard then covers its heads exactly.
  bool whole_heads = false;
  // A rank holds a piece of it together with a piece of another sub-matrix: `shard` orthogonalizes
  // them as one matrix, so its result for this sub-matrix depends on the others'.
  bool mixed_under_shard = false;
};

// Expert parallelism for a routed expert matrix: whole experts per rank (experts_per_rank[r] =
// E // tp + (r < E % tp)), each orthogonalized on its own rank. Exact (bit-identical to NS of the
// unsharded expert) with no communication.
struct ExpertParallelAudit {
  std::vector<std::int64_t> experts_per_rank;
  std::vector<RankCost> ranks;  // every expert of this matrix a rank holds, one layer
  double time_s = 0;            // slowest rank
};

struct ParamAudit {
  MuonParam param;
  Layout layout;
  std::vector<std::int64_t> shard_sizes;  // along the split axis, per rank
  std::vector<int> zero_width_ranks;
  bool per_head_applies = false;          // if not, strategy(Strategy::per_head).why_not says why
  std::vector<StrategyAudit> strategies;  // in kAllStrategies order
  std::uint64_t whole_ns_flops = 0;       // NS of the unsharded matrix (plain convention)
  // Muon's aspect scale sqrt(rows/cols) when rows > cols (SPEC §1.4): from the unsharded shape,
  // and from each rank's shard as DeepSpeed computes it under AutoTP (0 for an empty shard).
  double scale_global = 1;
  std::vector<double> scale_local;
  // Cheapest by estimated time (slowest rank) among the strategies exact for `whole`:
  std::optional<Strategy> cheapest_bit_identical;  // gather or owner (shard for a matrix every rank holds whole)
  std::optional<Strategy> cheapest_exact;          // also counting the exact-arithmetic ones
  std::optional<ShardDivergence> divergence;       // when measured
  std::vector<SubMatrixAudit> parts;               // fused matrices: their sub-matrices, in order
  std::optional<ExpertParallelAudit> expert_parallel;  // routed experts: the alternative placement

  const StrategyAudit& strategy(Strategy) const;
};

// The whole-model plans: one strategy for every matrix, or a choice per matrix.
enum class Plan {
  shard,  // the uniform plans: one strategy for every matrix
  gather,
  owner,
  gram_allreduce,
  gram_restart_allreduce,
  per_head_shard,                   // per_head on q/k/v, shard elsewhere (DeepSpeed's per_head_muon)
  cheapest_bit_identical,           // per matrix the faster of gather and owner
  cheapest_exact,                   // per matrix the fastest strategy exact for whole
  per_head_cheapest_bit_identical,  // per_head on q/k/v, the faster of gather/owner elsewhere
};
inline constexpr Plan kAllPlans[] = {Plan::shard,
                                     Plan::gather,
                                     Plan::owner,
                                     Plan::gram_allreduce,
                                     Plan::gram_restart_allreduce,
                                     Plan::per_head_shard,
                                     Plan::cheapest_bit_identical,
                                     Plan::cheapest_exact,
                                     Plan::per_head_cheapest_bit_identical};
// "shard", ..., "per_head+shard", "per_head+cheapest_bit_identical" (keys of nsv.audit/1).
std::string_view plan_name(Plan);

// One choice of strategy per matrix, summed over an optimizer step (all layers, every copy of a
// matrix: a routed expert matrix counts num_experts times).
struct PlanTotals {
  Plan plan = Plan::shard;
  // What the plan promises for its semantics. `partial`: exact on some matrices (per_head on
  // q/k/v) and a different result on the others; `promise` is Promise::none then.
  Promise promise = Promise::none;
  bool partial = false;
  std::vector<Strategy> choice;  // per matrix of the layer
  double step_time_s = 0;        // slowest rank's sum (see audit_totals.cpp for the model)
  double compute_s = 0, latency_s = 0, bandwidth_s = 0;  // of that rank
  std::uint64_t bytes_sent_max_rank = 0, bytes_sent_total = 0, messages_max_rank = 0, flops_max_rank = 0;
  std::uint64_t peak_extra_memory = 0;  // largest single-matrix extra buffer on any rank
};

// The routed experts alone over an optimizer step, placed two ways: AutoTP's (every expert
// sharded across the ranks as its role says) and expert parallelism (whole experts per rank).
struct ExpertTotals {
  std::int64_t matrices_per_step = 0;  // expert matrices (experts x expert matrices x layers)
  PlanTotals tensor_parallel_shard;    // sharded experts, NS of each shard (inexact)
  PlanTotals tensor_parallel_exact;    // sharded experts, the faster of gather/owner per matrix
  PlanTotals expert_parallel;          // whole experts per rank: bit-identical, no communication
  ExpertPlacement deepspeed = ExpertPlacement::none;  // what today's DeepSpeed does (the family record)
};

struct AuditTotals {
  std::int64_t layers = 0;
  std::int64_t muon_params_per_layer = 0, muon_params = 0;
  std::int64_t total_params = 0, non_muon_params = 0;
  std::int64_t per_head_params = 0;  // in matrices per-head can make exact at this tp
  double per_head_exact_fraction_params = 0, per_head_exact_fraction_flops = 0;
  std::uint64_t ns_flops_whole_per_step = 0;  // unsharded NS of every Muon matrix, all layers
  std::vector<PlanTotals> plans;              // in kAllPlans order
  std::optional<ExpertTotals> experts;        // MoE models only

  // A reference into `plans`: refused on a temporary, whose plans are gone by the next line.
  const PlanTotals& plan(Plan) const&;
  const PlanTotals& plan(Plan) && = delete;
};

// A recommended plan and what it costs against today's shard path.
struct PlanChoice {
  Plan plan = Plan::shard;
  double step_time_s = 0;
  double vs_shard_s = 0;  // step_time_s minus the shard plan's
};

struct Recommendation {
  bool nothing_to_choose = false;  // tp = 1: every strategy is the unsharded kernel
  double shard_step_time_s = 0;    // today's path
  PlanChoice bit_identical;        // the fastest of gather, owner, cheapest_bit_identical
  // The fastest of the all-reduce plans and cheapest_exact, when faster than bit_identical.
  std::optional<PlanChoice> exact_arithmetic;
  PlanChoice per_head_mixed;       // per_head on q/k/v, the faster of gather/owner elsewhere
  // The share per_head makes tp-independent with no communication (AuditTotals' fractions).
  double per_head_fraction_params = 0, per_head_fraction_flops = 0;
};

// What an audit has to say besides its tables, one kind per finding. A note carries the values
// it cites that AuditResult's model and options do not already hold.
enum class AuditNoteKind {
  zero_width_ranks,    // tp > num_key_value_heads: ranks holding no KV group (DeepSpeed#7259)
  uneven_attention,    // tp does not divide num_key_value_heads
  local_aspect_scale,  // DeepSpeed's aspect scale from the shard differs from the whole's (SPEC §4 M2)
  qkv_bias,            // q/k/v carry biases: not Muon matrices
  fused_projection,    // a fused matrix is cut per sub-matrix; what shard and per_head give for each
  replicated_matrix,   // matrices AutoTP leaves whole on every rank (routers): NS is exact as is
  routed_experts,      // tensor-parallel vs expert-parallel experts, and DeepSpeed's choice
  not_muon_matrices,   // embeddings, lm_head, norms and biases, with their counts
  grain_rule,          // grain > 1 applies to the grain-rule matrices only
  exactness,           // what each strategy promises
  cost_model,          // the alpha-beta model, its rates and wire dtypes
  shard_divergence,    // how the shard divergence is measured (only when measured)
};

// A matrix whose shard-local aspect scale differs from the unsharded one.
struct AspectScaleShift {
  std::string matrix;
  double local_min = 0, local_max = 0;  // over the ranks holding a piece
  double global = 0;
};

struct AuditNote {
  AuditNoteKind kind = AuditNoteKind::exactness;
  std::vector<int> ranks;                       // zero_width_ranks: the ranks with no KV group
  std::vector<AspectScaleShift> aspect_scales;  // local_aspect_scale: in matrix order
};

struct AuditResult {
  ModelConfig model;
  AuditOptions options;
  std::vector<ParamAudit> params;
  AuditTotals totals;
  Recommendation recommendation;
  std::vector<AuditNote> notes;  // in the order they are rendered
  std::optional<MeshAudit> mesh;  // at dp > 1
};

AuditResult run_audit(const ModelConfig&, const AuditOptions&);

}  // namespace nsv
