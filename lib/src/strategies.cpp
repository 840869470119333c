#include "nsv/strategies.hpp"

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
  if (static_cast<int>(m.shards.size()) != m.layout.tp())
    throw std::invalid_argument("one shard per rank of the layout is required: " + std::to_string(m.shards.size()) +
                                " shards for " + std::to_string(m.layout.tp()) + " ranks");
  // The unsplit length, from any shard (none at tp = 0, which plan_strategy refuses).
  const std::int64_t other = m.shards.empty() ? 0 : (m.layout.axis == 0 ? m.shards[0].cols() : m.shards[0].rows());
  const std::int64_t rows = m.layout.axis == 0 ? m.layout.dim : other;
  const std::int64_t cols = m.layout.axis == 0 ? other : m.layout.dim;
  StrategyPlan plan = plan_strategy(s, m.layout, rows, cols, m.head_dim, cfg, opt);  // validates; throws if inapplicable
  const StrategyRecord& rec = strategy_record(s);
  auto comm = make_simulated_communicator(m.layout.tp(), opt.order);
  StrategyRun run{s, detail::operand_impl(rec.operand).execute(rec, b, m, cfg, opt, *comm), comm->ledger(),
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

Comparison compare_with_target(const StrategyRun& run, const MatD& target, const Layout& layout) {
  Comparison c;
  const auto blocks = split(target, layout);
  int counted = 0;
  for (int r = 0; r < layout.tp(); ++r) {
    const auto i = static_cast<std::size_t>(r);
    const MatD& out = run.outputs[i];
    RankComparison rc;
    rc.rank = r;
    rc.rows = out.rows();
    rc.cols = out.cols();
    rc.traffic = run.ledger.ranks.empty() ? RankTraffic{} : run.ledger.ranks[i];
    rc.flops = run.flops[i];
    rc.extra_memory = run.extra_memory[i];
    if (out.size() > 0) {
      rc.rel_diff = rel_diff(out, blocks[i]);
      rc.cosine = cosine(out, blocks[i]);
      rc.norm_ratio = norm_ratio(out, blocks[i]);
      rc.bit_identical = compare_bits(out, blocks[i], DType::fp64).identical;
      c.rel_diff_mean += rc.rel_diff;
      c.rel_diff_max = std::max(c.rel_diff_max, rc.rel_diff);
      ++counted;
    }
    c.bit_identical = c.bit_identical && rc.bit_identical;
    c.ranks.push_back(rc);
  }
  if (counted > 0) c.rel_diff_mean /= counted;
  c.collectives = run.ledger.calls;
  return c;
}

}  // namespace nsv
