// Operand::own_shard: each rank orthogonalizes what it holds, nothing else (AutoTP today).
#include "nsv/strategies.hpp"
#include "operand.hpp"

namespace nsv::detail {
namespace {

StrategyPlan plan(const StrategyRecord& rec, const PlanShape& m, const NsConfig& cfg, const StrategyOptions&) {
  StrategyPlan p = empty_plan(rec.strategy, m.layout.tp());
  for (int r = 0; r < m.layout.tp(); ++r) {
    const auto [rows, cols] = m.shard(r);
    p.flops[static_cast<std::size_t>(r)] = rows * cols > 0 ? ns_flops(cfg, rows, cols) : 0;
  }
  return p;
}

std::vector<MatD> execute(const StrategyRecord&, const Backend& b, const ShardedMatrix& m, const NsConfig& cfg,
                          const StrategyOptions&, Communicator& comm) {
  std::vector<MatD> shards = hosted_shards(comm, m);
  Batch nonempty;
  for (const auto& s : shards)
    if (s.size() > 0) nonempty.push_back(s);
  const Batch out = b.newton_schulz(nonempty, cfg);  // one batch: the hosted ranks run in parallel
  for (std::size_t i = 0, k = 0; i < shards.size(); ++i)
    if (shards[i].size() > 0) shards[i] = out[k++];
  return on_ranks(comm, m.layout.tp(), std::move(shards));
}

}  // namespace

const OperandImpl kOwnShard{plan, execute};

}  // namespace nsv::detail
