#pragma once
// Orthogonalizing a matrix held on a TP x DP mesh (mesh.hpp). A mesh strategy is a DP
// stage followed by a TP strategy (strategy.hpp), one record per stage:
//   mesh       the mesh as one group of tp * dp ranks, each holding its 2-D block: mesh+shard is
//              NS of each block (what combining FSDP/ZeRO with TP naively does; any blocks that are
//              matrices, a grid included), and on the composed layout (blocks that tile one axis)
//              mesh+gram_allreduce the Gram all-reduce across both axes, mesh+gather/owner a
//              gather to every rank / to one rank of the whole mesh.
//   dp_gather  an all-gather over each DP group restores every TP shard on each of its DP ranks;
//              every DP index then runs the TP strategy over its TP group and keeps its piece.
//              TP's semantics then apply.
//   dp_owner   each matrix has one owning DP index (the audit deals them out, round-robin or by
//              size): an all-to-all over each DP group brings the shards to it, its TP group runs
//              the TP strategy, and a second all-to-all sends every DP rank its piece back (the
//              torchtitan / Dion / Moonlight way: whole matrices handed to data-parallel ranks).
// What each promises is its TP strategy's promise on the layout the TP stage sees: the composed
// layout for `mesh`, the TP layout for the others. Every plan issues the collectives its execution
// issues (the properties compare the two ledgers), per mesh rank.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nsv/communicator.hpp"
#include "nsv/cost_model.hpp"
#include "nsv/mesh.hpp"
#include "nsv/strategies.hpp"
#include "nsv/strategy.hpp"

namespace nsv {

enum class DpStage { mesh, dp_gather, dp_owner };
inline constexpr DpStage kAllDpStages[] = {DpStage::mesh, DpStage::dp_gather, DpStage::dp_owner};
std::string_view dp_stage_name(DpStage);
std::string_view dp_stage_summary(DpStage);  // one line: what the stage does

struct MeshStrategy {
  DpStage stage = DpStage::dp_gather;
  Strategy tp = Strategy::gather;
  friend bool operator==(const MeshStrategy&, const MeshStrategy&) = default;
};
// Every stage with every TP strategy, stage-major.
std::vector<MeshStrategy> all_mesh_strategies();
std::string mesh_strategy_name(MeshStrategy);  // "<stage>+<tp strategy>", e.g. "dp_owner+gather"

// mesh+shard: NS of each rank's block, which needs no layout, only blocks that are matrices.
bool is_block_ns(MeshStrategy);
// The layout the TP strategy runs on: composed_layout for `mesh` (nullopt when it has none), the
// TP layout otherwise (mesh+shard runs on the blocks themselves).
std::optional<Layout> tp_stage_layout(MeshStrategy, const MeshLayout&, std::string* why = nullptr);
// Empty when the strategy applies, otherwise why not and what to use instead.
std::string mesh_inapplicable_reason(MeshStrategy, const MeshLayout&, std::int64_t head_dim);
// Against natural_target(s.tp); Promise::none when it does not apply.
Promise mesh_promise_on(MeshStrategy, const MeshLayout&);

// What each mesh rank does: a StrategyPlan (cost_model.hpp) whose ranks are the mesh's, in
// mesh-rank order, so rank_cost prices it. The ledger's calls are those one rank takes part in:
// the mesh-wide ones plus, per collective, the most any DP group and any TP group issues (for
// dp_owner: the owning index's TP group).
struct MeshPlan {
  MeshStrategy strategy;
  StrategyPlan ranks;
};

// `dp_owner` is the owning DP index of a dp_owner strategy (ignored otherwise). Throws
// std::invalid_argument with mesh_inapplicable_reason when the strategy does not apply, and
// nsv::InvalidField naming `dp_owner` outside 0..dp-1.
MeshPlan plan_mesh_strategy(MeshStrategy, const MeshLayout&, std::int64_t head_dim, const NsConfig&,
                            const StrategyOptions& = {}, int dp_owner = 0);

// The matrix on the mesh: every rank's piece (split_mesh), only the hosted ones read.
struct MeshMatrix {
  std::vector<MatD> pieces;
  MeshLayout layout;
  std::int64_t head_dim = 0;  // > 0 when whole heads of this size lie along dim 0
};
MeshMatrix shard_on_mesh(const MatD& g, const MeshLayout&, std::int64_t head_dim = 0);

// The communicators a process takes part in: the whole mesh (mesh-rank order), the TP group of
// every DP index d and the DP group of every TP index t whose ranks it hosts (null elsewhere).
// A process hosting mesh rank (t, d) hosts TP rank t of tp_groups[d] and DP rank d of dp_groups[t].
struct MeshCommunicators {
  Communicator* mesh = nullptr;
  std::vector<Communicator*> tp_groups;  // [d]
  std::vector<Communicator*> dp_groups;  // [t]
};

// Every rank in this process, the collectives reduced in `order`.
class SimulatedMesh {
 public:
  SimulatedMesh(int tp, int dp, ReductionOrder order);
  MeshCommunicators communicators();

 private:
  std::vector<std::unique_ptr<Communicator>> owned_;
  int tp_, dp_;
};

struct MeshRun {
  MeshStrategy strategy;
  std::vector<MatD> pieces;  // mesh rank r's piece of the result (1 x n), empty where not hosted
  // What the execution's collectives recorded (the hosted ranks' rows, calls counted as MeshPlan
  // counts them; the communicators are read as this run's alone, so pass fresh ones), and the
  // plan's FLOPs and extra memory.
  Ledger ledger;
  std::vector<std::uint64_t> flops, extra_memory;
};

// plan_mesh_strategy + the execution on simulated ranks with `opt.order`, or on given
// communicators (MPI: lib/mpi/), where only the hosted ranks' pieces are read and returned.
MeshRun run_mesh_strategy(MeshStrategy, const Backend&, const MeshMatrix&, const NsConfig&, const StrategyOptions& = {},
                          int dp_owner = 0);
MeshRun run_mesh_strategy(MeshStrategy, const Backend&, const MeshMatrix&, const NsConfig&, const StrategyOptions&,
                          int dp_owner, const MeshCommunicators&);

}  // namespace nsv
