#include "nsv/strategies.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "nsv/cost_model.hpp"
#include "nsv/metrics.hpp"
#include "nsv/per_head.hpp"
#include "strategies/operand.hpp"

namespace nsv {

ShardedMatrix shard_matrix(const MatD& g, const Layout& layout, std::int64_t head_dim) {
  return {split(g, layout), layout, head_dim};
}

StrategyRun run_strategy(Strategy s, const Backend& b, const ShardedMatrix& m, const NsConfig& cfg,
                         const StrategyOptions& opt) {
  const auto comm = make_simulated_communicator(std::max(m.layout.tp(), 1), opt.order);
  return run_strategy(s, b, m, cfg, opt, *comm);
}

StrategyRun run_strategy(Strategy s, const Backend& b, const ShardedMatrix& m, const NsConfig& cfg,
                         const StrategyOptions& opt, Communicator& comm) {
  if (static_cast<int>(m.shards.size()) != m.layout.tp())
    throw std::invalid_argument("one shard per rank of the layout is required: " + std::to_string(m.shards.size()) +
                                " shards for " + std::to_string(m.layout.tp()) + " ranks");
  if (comm.size() != m.layout.tp())
    throw std::invalid_argument("the communicator has " + std::to_string(comm.size()) + " ranks, the layout " +
                                std::to_string(m.layout.tp()));
  // The unsplit length, from a hosted shard (none at tp = 0, which plan_strategy refuses).
  const MatD* any = m.shards.empty() ? nullptr : &m.shards[static_cast<std::size_t>(comm.hosted_ranks().front())];
  const std::int64_t other = any == nullptr ? 0 : (m.layout.axis == 0 ? any->cols() : any->rows());
  const std::int64_t rows = m.layout.axis == 0 ? m.layout.dim : other;
  const std::int64_t cols = m.layout.axis == 0 ? other : m.layout.dim;
  StrategyPlan plan = plan_strategy(s, m.layout, rows, cols, m.head_dim, cfg, opt);  // validates; throws if inapplicable
  const StrategyRecord& rec = strategy_record(s);
  StrategyRun run{s, detail::operand_impl(rec.operand).execute(rec, b, m, cfg, opt, comm), comm.ledger(),
                  std::move(plan.flops), std::move(plan.extra_memory)};
  return run;
}

MatD target_result(Target t, const Backend& b, const MatD& g, std::int64_t head_dim, const NsConfig& cfg) {
  if (t == Target::whole) return newton_schulz(b, g, cfg);
  if (head_dim < 1) throw std::invalid_argument("the per_head target needs the head dimension");
  if (g.rows() % head_dim != 0)
    throw std::invalid_argument(std::to_string(g.rows()) + " rows are not a whole number of heads of " + std::to_string(head_dim));
  return per_head_ns(b, g, g.rows() / head_dim, cfg);
}

RankComparison compare_rank(const StrategyRun& run, const MatD& target_block, int rank) {
  const auto i = static_cast<std::size_t>(rank);
  const MatD& out = run.outputs[i];
  RankComparison rc;
  rc.rank = rank;
  rc.rows = out.rows();
  rc.cols = out.cols();
  rc.traffic = run.ledger.ranks.empty() ? RankTraffic{} : run.ledger.ranks[i];
  rc.flops = run.flops[i];
  rc.extra_memory = run.extra_memory[i];
  if (out.size() > 0) {
    rc.rel_diff = rel_diff(out, target_block);
    rc.cosine = cosine(out, target_block);
    rc.norm_ratio = norm_ratio(out, target_block);
    rc.bit_identical = compare_bits(out, target_block, DType::fp64).identical;
  }
  return rc;
}

Comparison summarize_ranks(std::vector<RankComparison> ranks, const Ledger& ledger) {
  Comparison c;
  int counted = 0;
  for (const RankComparison& rc : ranks) {
    if (rc.rows * rc.cols > 0) {
      c.rel_diff_mean += rc.rel_diff;
      c.rel_diff_max = std::max(c.rel_diff_max, rc.rel_diff);
      ++counted;
    }
    c.bit_identical = c.bit_identical && rc.bit_identical;
  }
  if (counted > 0) c.rel_diff_mean /= counted;
  c.ranks = std::move(ranks);
  c.collectives = ledger.calls;
  return c;
}

Comparison compare_with_target(const StrategyRun& run, const MatD& target, const Layout& layout) {
  const auto blocks = split(target, layout);
  std::vector<RankComparison> ranks;
  for (int r = 0; r < layout.tp(); ++r) ranks.push_back(compare_rank(run, blocks[static_cast<std::size_t>(r)], r));
  return summarize_ranks(std::move(ranks), run.ledger);
}

}  // namespace nsv
