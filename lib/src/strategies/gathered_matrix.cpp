// Operand::gathered_matrix: one all-gather in the storage dtype, then every rank orthogonalizes
// the whole matrix and keeps its block.
#include "nsv/strategies.hpp"
#include "operand.hpp"

namespace nsv::detail {
namespace {

StrategyPlan plan(const StrategyRecord& rec, const PlanShape& m, const NsConfig& cfg, const StrategyOptions& opt) {
  const int tp = m.layout.tp();
  StrategyPlan p = empty_plan(rec.strategy, tp);
  std::vector<std::int64_t> shard_elements;
  for (int r = 0; r < tp; ++r) shard_elements.push_back(m.shard_elements(r));
  record_all_gather(p.ledger, shard_elements, opt.storage);
  for (int r = 0; r < tp; ++r) {
    p.flops[static_cast<std::size_t>(r)] = ns_flops(cfg, m.rows, m.cols);
    p.extra_memory[static_cast<std::size_t>(r)] = bytes_of(m.rows * m.cols, opt.storage) * 2;  // the matrix and its NS
  }
  return p;
}

std::vector<MatD> execute(const StrategyRecord&, const Backend& b, const ShardedMatrix& m, const NsConfig& cfg,
                          const StrategyOptions& opt, Communicator& comm) {
  // The in-process gather concatenates in rank order; a fused layout is then reordered by its
  // ranges (a real implementation gathers into the same positions).
  comm.all_gather(m.shards, m.layout.axis, opt.storage);
  const MatD full = assemble(m.shards, m.layout);
  // Every rank computes the same NS of the same matrix; the simulation computes it once.
  return split(newton_schulz(b, full, cfg), m.layout);
}

}  // namespace

const OperandImpl kGatheredMatrix{plan, execute};

}  // namespace nsv::detail
