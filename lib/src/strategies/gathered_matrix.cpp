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

// The rank-order concatenation of the shards cut back into them (rank r's shard is layout.width(r)
// long along the axis).
std::vector<MatD> cut_concatenation(const MatD& concatenated, const Layout& layout) {
  std::vector<MatD> shards;
  std::int64_t at = 0;
  for (int r = 0; r < layout.tp(); ++r) {
    const std::int64_t w = layout.width(r);
    shards.push_back(layout.axis == 0 ? MatD(concatenated.middleRows(at, w)) : MatD(concatenated.middleCols(at, w)));
    at += w;
  }
  return shards;
}

std::vector<MatD> execute(const StrategyRecord&, const Backend& b, const ShardedMatrix& m, const NsConfig& cfg,
                          const StrategyOptions& opt, Communicator& comm) {
  // The gather concatenates in rank order; a fused layout is then reordered by its ranges (a
  // real implementation gathers into the same positions).
  const MatD gathered = comm.all_gather(hosted_shards(comm, m), m.layout.axis, opt.storage);
  const MatD full = assemble(cut_concatenation(gathered, m.layout), m.layout);
  // Every rank computes the same NS of the same matrix; a process computes it once for the
  // ranks it hosts.
  std::vector<MatD> blocks = split(newton_schulz(b, full, cfg), m.layout);
  std::vector<MatD> hosted;
  for (int r : comm.hosted_ranks()) hosted.push_back(std::move(blocks[static_cast<std::size_t>(r)]));
  return on_ranks(comm, m.layout.tp(), std::move(hosted));
}

}  // namespace

const OperandImpl kGatheredMatrix{plan, execute};

}  // namespace nsv::detail
