#include "nsv/strategies.hpp"

#include <stdexcept>
#include <string>

#include "nsv/cost_model.hpp"
#include "nsv/metrics.hpp"
#include "nsv/per_head.hpp"

namespace nsv {

ShardedMatrix shard_matrix(const MatD& g, const Layout& layout, std::int64_t head_dim) {
  return {split(g, layout), layout, head_dim};
}

namespace {

StrategyRun empty_run(Strategy s, int tp) {
  StrategyRun run{s, {}, {}, std::vector<std::uint64_t>(static_cast<std::size_t>(tp), 0),
                  std::vector<std::uint64_t>(static_cast<std::size_t>(tp), 0)};
  run.outputs.resize(static_cast<std::size_t>(tp));
  return run;
}

// Each rank orthogonalizes what it holds, nothing else.
StrategyRun run_shard(const Backend& b, const ShardedMatrix& m, const NsConfig& cfg) {
  auto run = empty_run(Strategy::shard, m.layout.tp());
  auto comm = make_simulated_communicator(m.layout.tp(), ReductionOrder::rank);
  Batch nonempty;
  for (const auto& s : m.shards)
    if (s.size() > 0) nonempty.push_back(s);
  const Batch out = b.newton_schulz(nonempty, cfg);
  for (std::size_t r = 0, k = 0; r < m.shards.size(); ++r) {
    const auto& s = m.shards[r];
    run.outputs[r] = s.size() > 0 ? out[k++] : s;
  }
  run.ledger = comm->ledger();
  return run;
}

StrategyRun run_gather(const Backend& b, const ShardedMatrix& m, const NsConfig& cfg, const StrategyOptions& opt) {
  auto run = empty_run(Strategy::gather, m.layout.tp());
  auto comm = make_simulated_communicator(m.layout.tp(), opt.order);
  // The in-process gather concatenates in rank order; a fused layout is then reordered by its
  // ranges (a real implementation gathers into the same positions).
  comm->all_gather(m.shards, m.layout.axis, opt.storage);
  const MatD full = assemble(m.shards, m.layout);
  // Every rank computes the same NS of the same matrix; the simulation computes it once.
  const MatD x = newton_schulz(b, full, cfg);
  run.outputs = split(x, m.layout);
  run.ledger = comm->ledger();
  return run;
}

void check_per_head_applies(const ShardedMatrix& m) {
  if (const std::string why = inapplicable_reason(Strategy::per_head, m.layout, m.head_dim); !why.empty())
    throw std::invalid_argument(why);
}

// Each rank recomputes its head count from its shard: num_heads_local = rows_local / head_dim.
StrategyRun run_per_head(const Backend& b, const ShardedMatrix& m, const NsConfig& cfg) {
  check_per_head_applies(m);
  auto run = empty_run(Strategy::per_head, m.layout.tp());
  auto comm = make_simulated_communicator(m.layout.tp(), ReductionOrder::rank);
  for (std::size_t r = 0; r < m.shards.size(); ++r) {
    const MatD& s = m.shards[r];
    if (s.rows() == 0) {
      run.outputs[r] = s;
      continue;
    }
    const std::int64_t local_heads = s.rows() / m.head_dim;
    run.outputs[r] = per_head_ns(b, s, local_heads, cfg);
  }
  run.ledger = comm->ledger();
  return run;
}

StrategyRun run_allreduce(Strategy s, const Backend& b, const ShardedMatrix& m, const NsConfig& cfg,
                          const StrategyOptions& opt) {
  auto run = empty_run(s, m.layout.tp());
  auto comm = make_simulated_communicator(m.layout.tp(), opt.order);
  const Iteration it = s == Strategy::gram_allreduce ? Iteration::standard : Iteration::gram;
  ShardedResult res = b.newton_schulz_sharded(m.shards, m.layout.axis, it, *comm, cfg);
  run.outputs = std::move(res.shards);
  run.flops = std::move(res.flops_per_rank);  // counted by the iteration that ran
  run.ledger = comm->ledger();
  return run;
}

// One rank (the owner, rank 0 for a single matrix) receives every shard, orthogonalizes the whole
// matrix once, and sends each rank its block back: two all-to-alls.
StrategyRun run_owner(const Backend& b, const ShardedMatrix& m, const NsConfig& cfg, const StrategyOptions& opt) {
  const int tp = m.layout.tp();
  const std::size_t owner = 0;
  auto run = empty_run(Strategy::owner, tp);
  auto comm = make_simulated_communicator(tp, opt.order);
  std::vector<std::vector<MatD>> to_owner(static_cast<std::size_t>(tp), std::vector<MatD>(static_cast<std::size_t>(tp)));
  for (std::size_t r = 0; r < to_owner.size(); ++r) to_owner[r][owner] = m.shards[r];
  const auto received = comm->all_to_all(to_owner, opt.storage);
  const MatD full = assemble(received[owner], m.layout);
  const MatD x = newton_schulz(b, full, cfg);
  const auto blocks = split(x, m.layout);
  std::vector<std::vector<MatD>> back(static_cast<std::size_t>(tp), std::vector<MatD>(static_cast<std::size_t>(tp)));
  back[owner] = blocks;
  const auto returned = comm->all_to_all(back, opt.storage);
  for (std::size_t r = 0; r < returned.size(); ++r) run.outputs[r] = returned[r][owner];
  run.ledger = comm->ledger();
  return run;
}

}  // namespace

StrategyRun run_strategy(Strategy s, const Backend& b, const ShardedMatrix& m, const NsConfig& cfg,
                         const StrategyOptions& opt) {
  cfg.validate();
  if (static_cast<int>(m.shards.size()) != m.layout.tp())
    throw std::invalid_argument("one shard per rank of the layout is required");
  StrategyRun run = [&] {
    switch (s) {
      case Strategy::shard: return run_shard(b, m, cfg);
      case Strategy::gather: return run_gather(b, m, cfg, opt);
      case Strategy::per_head: return run_per_head(b, m, cfg);
      case Strategy::gram_allreduce:
      case Strategy::gram_restart_allreduce: return run_allreduce(s, b, m, cfg, opt);
      case Strategy::owner: return run_owner(b, m, cfg, opt);
    }
    throw std::logic_error("unhandled strategy");
  }();
  // FLOPs and memory follow from the shapes alone: one accounting, the cost model's, serves the
  // simulation and the audit. The all-reduce strategies keep the FLOPs their iteration counted
  // (the cost model runs the same iteration on shapes; the properties check the two agree).
  const std::int64_t rows = m.layout.axis == 0 ? m.layout.dim : m.shards[0].rows();
  const std::int64_t cols = m.layout.axis == 0 ? m.shards[0].cols() : m.layout.dim;
  StrategyPlan plan = plan_strategy(s, m.layout, rows, cols, m.head_dim, cfg, opt);
  run.extra_memory = std::move(plan.extra_memory);
  if (s != Strategy::gram_allreduce && s != Strategy::gram_restart_allreduce) run.flops = std::move(plan.flops);
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
