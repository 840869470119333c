// Operand::own_heads: each rank orthogonalizes every head block of its head-aligned dim-0 shard,
// recomputing its head count from its shard (num_heads_local = rows_local / head_dim), as
// DeepSpeed's per-head NS does. Applicability (inapplicable_reason) is checked by the callers.
#include "nsv/per_head.hpp"
#include "nsv/strategies.hpp"
#include "operand.hpp"
#include "nsv/checked.hpp"

namespace nsv::detail {
namespace {

StrategyPlan plan(const StrategyRecord& rec, const PlanShape& m, const NsConfig& cfg, const StrategyOptions&) {
  StrategyPlan p = empty_plan(rec.strategy, m.layout.tp());
  for (int r = 0; r < m.layout.tp(); ++r) {
    const std::int64_t local_heads = m.layout.width(r) / m.head_dim;
    p.flops[static_cast<std::size_t>(r)] =
        local_heads > 0 ? checked_mul(static_cast<std::uint64_t>(local_heads), ns_flops(cfg, m.head_dim, m.cols), "a rank's per-head NS FLOP count") : 0;
  }
  return p;
}

std::vector<MatD> execute(const StrategyRecord&, const Backend& b, const ShardedMatrix& m, const NsConfig& cfg,
                          const StrategyOptions&, Communicator& comm) {
  std::vector<MatD> shards = hosted_shards(comm, m);
  for (MatD& s : shards)
    if (s.rows() > 0) s = per_head_ns(b, s, s.rows() / m.head_dim, cfg);
  return on_ranks(comm, m.layout.tp(), std::move(shards));
}

}  // namespace

const OperandImpl kOwnHeads{plan, execute};

}  // namespace nsv::detail
