#pragma once
// The audit at TP x DP (`nsv audit --tp 8 --dp 64`): for every Muon matrix of a layer,
// what each mesh strategy (mesh_strategies.hpp) promises and costs per rank, the cheapest exact
// one; over an optimizer step, what the strategies cost, and how evenly an owner-over-DP scheme
// (dp_owner: whole matrices dealt to DP indices) loads the DP indices, which is what decides its
// step time.
//
// The step model (the one-axis audit's, audit_totals.cpp, on the mesh): every rank takes part in
// every matrix under dp_gather and mesh strategies, so a step costs the sum over the step's
// matrices of the slowest rank's time (an upper bound of the slowest rank's sum); under dp_owner,
// a DP index's TP group orthogonalizes the matrices it owns, the other ranks only send and receive
// pieces, so a step costs the busiest DP index's sum of its matrices' times. Waiting at
// collectives beyond this is not modelled.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nsv/cost_model.hpp"
#include "nsv/mesh_strategies.hpp"
#include "nsv/analysis/model_config.hpp"

namespace nsv {

// How the matrices of a step are dealt to DP indices: round_robin (matrix k of the step, layer by
// layer in the family record's order, to index k mod dp: torchtitan's and Dion's order) or by_size
// (largest NS first, each to the least-loaded index, ties to the lowest: the greedy balance).
enum class OwnerAssignment { round_robin, by_size };
inline constexpr OwnerAssignment kAllOwnerAssignments[] = {OwnerAssignment::round_robin, OwnerAssignment::by_size};
std::string_view owner_assignment_name(OwnerAssignment);

struct MeshStrategyAudit {
  MeshStrategy strategy;
  Target target = Target::whole;
  bool applicable = true;
  Promise promise = Promise::none;  // against target on this matrix's mesh; none when not applicable
  std::string why_not;
  double time_s = 0;  // the slowest mesh rank, this matrix alone (dp_owner: owned by DP index 0)
  // What a step's share of this matrix is: time_s, and for dp_owner time_s / dp (its owners spread
  // evenly; OwnerLoad says how evenly they really are). The cheapest strategy is chosen by this.
  double step_share_s = 0;
  std::uint64_t flops_max_rank = 0, bytes_sent_max_rank = 0, messages_max_rank = 0, extra_memory_max_rank = 0;

  bool exact_for_whole() const { return applicable && promise != Promise::none && target == Target::whole; }
};

struct MeshParamAudit {
  MuonParam param;
  MeshLayout layout;
  std::vector<MeshStrategyAudit> strategies;  // all_mesh_strategies() order
  std::optional<MeshStrategy> cheapest_bit_identical, cheapest_exact;  // for the whole-matrix target
  std::uint64_t whole_ns_flops = 0;

  const MeshStrategyAudit& strategy(MeshStrategy) const;
};

// One mesh strategy for every matrix, over a step (when it applies to every matrix).
struct MeshStepTotals {
  MeshStrategy strategy;
  bool applies_to_every_matrix = true;
  Promise promise = Promise::none;  // the weakest over the matrices
  double step_time_s = 0;           // dp_owner: dealt round-robin
};

struct OwnerLoad {
  OwnerAssignment assignment = OwnerAssignment::round_robin;
  std::int64_t matrices_per_step = 0;
  // Busiest DP index's NS FLOPs (whole-matrix convention) over the mean over DP indices.
  double step_imbalance = 1;
  double worst_layer_imbalance = 1;  // the same within one layer's matrices, worst layer
  std::uint64_t busiest_flops = 0;
  double mean_flops = 0;
  double gather_step_time_s = 0, owner_step_time_s = 0;  // dp_owner+gather and dp_owner+owner under this assignment
};

struct MeshAudit {
  int tp = 1, dp = 1;
  DpPartition partition = DpPartition::zero;
  std::vector<MeshParamAudit> params;  // the layer's Muon matrices, in the family record's order
  std::vector<MeshStepTotals> steps;   // all_mesh_strategies() order
  std::vector<OwnerLoad> owner_loads;  // kAllOwnerAssignments order
  // The fastest step among the bit-identical uniform strategies, and the naive mesh+shard's.
  std::optional<MeshStrategy> fastest_bit_identical_step;

  const MeshStepTotals& step(MeshStrategy) const;
};

// The owner load balance deals every matrix of a step (every layer, every expert copy) to a DP
// index, one by one: a mesh audit takes models of at most this many matrices per step, 2^20, about
// 15 times the largest published MoE (Kimi K2: 61 layers x 384 experts x 3 matrices); a larger
// one is refused before any work, naming the count (InvalidField "dp": the one-axis audit, dp 1,
// takes any size).
inline constexpr std::int64_t kMaxMeshStepMatrices = std::int64_t{1} << 20;
void require_mesh_auditable(const ModelConfig&);

// Each matrix's TP layout is AutoTP's (autotp_layout with `grain`); tp and dp as in AuditOptions.
MeshAudit audit_mesh(const ModelConfig&, int tp, int dp, DpPartition, std::int64_t grain, const NsConfig&, const CostParams&,
                     const StrategyOptions&);

}  // namespace nsv
