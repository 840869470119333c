#pragma once
// How each Operand of a strategy record (nsv/strategy.hpp) is planned and executed: one plan
// and one execution per operand, in lib/src/strategies/<operand>.cpp. plan_strategy (the cost
// model) and run_strategy read the record, then call its operand's pair; the plan supplies the
// FLOPs and memory of a run, the execution its outputs and the ledger of the collectives it
// actually issued (the properties check that ledger against the plan's).
#include <cstdint>
#include <vector>

#include "nsv/backend.hpp"
#include "nsv/communicator.hpp"
#include "nsv/cost_model.hpp"
#include "nsv/strategy.hpp"

namespace nsv {
struct ShardedMatrix;  // strategies.hpp: the executions use it, the plans (the cost model) do not
}

namespace nsv::detail {

// The matrix a plan is made for: its shape and layout, nothing of its values.
struct PlanShape {
  const Layout& layout;
  std::int64_t rows = 0, cols = 0;
  std::int64_t head_dim = 0;  // > 0 when whole heads of this size lie along dim 0

  std::pair<std::int64_t, std::int64_t> shard(int rank) const { return shard_shape(layout, rows, cols, rank); }
  std::int64_t shard_elements(int rank) const {
    const auto [r, c] = shard(rank);
    return r * c;
  }
};

struct OperandImpl {
  StrategyPlan (*plan)(const StrategyRecord&, const PlanShape&, const NsConfig&, const StrategyOptions&);
  // Issues the collectives on `comm` and returns one block per rank of the layout: rank r's
  // block of the result for every rank comm hosts, an empty matrix for the others. Only the
  // hosted ranks' shards of the ShardedMatrix are read (under MPI the others are empty).
  std::vector<MatD> (*execute)(const StrategyRecord&, const Backend&, const ShardedMatrix&, const NsConfig&,
                               const StrategyOptions&, Communicator& comm);
};

// The shards of the ranks comm hosts, in hosted order.
std::vector<MatD> hosted_shards(const Communicator&, const ShardedMatrix&);
// One block per rank of a tp-rank layout: the hosted ranks' results (in hosted order) in their
// places, empty matrices elsewhere.
std::vector<MatD> on_ranks(const Communicator&, int tp, std::vector<MatD> hosted_results);

const OperandImpl& operand_impl(Operand);

// Every rank planned at zero: no FLOPs, no traffic, no extra memory.
StrategyPlan empty_plan(Strategy, int tp);
std::uint64_t bytes_of(std::int64_t elements, DType);

// The operands (one file each).
extern const OperandImpl kOwnShard, kOwnHeads, kGatheredMatrix, kOwnerMatrix, kShardedFrame;

}  // namespace nsv::detail
