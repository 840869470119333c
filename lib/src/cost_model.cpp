#include "nsv/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "normalize.hpp"
#include "nsv/invalid_field.hpp"
#include "ns_algorithm.hpp"

namespace nsv {
namespace {

std::uint64_t bytes_of(std::int64_t elements, DType d) {
  return static_cast<std::uint64_t>(elements) * static_cast<std::uint64_t>(bytes_per_element(d));
}

StrategyPlan empty_plan(Strategy s, int tp) {
  StrategyPlan p;
  p.strategy = s;
  p.ledger.ranks.resize(static_cast<std::size_t>(tp));
  p.flops.assign(static_cast<std::size_t>(tp), 0);
  p.extra_memory.assign(static_cast<std::size_t>(tp), 0);
  return p;
}

// --- the backends' sharded iteration, run on shapes ---------------------------------------------
// ns_algorithm.hpp's ShardedIteration with every matrix replaced by its shape: the same Gram
// all-reduces (counted into the ledger through the communicator's byte model, in the compute
// dtype as CpuOps sends them) and the same FLOP accounting, in O(steps) time for any size.
struct Shape {
  Eigen::Index r = 0, c = 0;
};

class ShapeOps {
 public:
  using Matrix = Shape;
  using Scalar = double;

  ShapeOps(Ledger& ledger, DType wire) : ledger_(ledger), wire_(wire) {}

  Scalar scalar(double v) const { return v; }
  Eigen::Index rows(const Shape& m) const { return m.r; }
  Eigen::Index cols(const Shape& m) const { return m.c; }
  Shape gram(const Shape& y) const { return {y.r, y.r}; }
  Shape square(const Shape& s, Scalar) const { return {s.r, s.r}; }
  Shape symmetric_product(const Shape& a, const Shape&) const { return {a.r, a.r}; }
  Shape matmul(const Shape& a, const Shape& b) const { return {a.r, b.c}; }
  Shape lincomb(Scalar, const Shape& x, Shape) const { return x; }
  void add_diagonal(Shape&, Scalar) const {}
  void recycle(Shape&&) const {}
  Shape all_reduce(Communicator&, const std::vector<Shape>& parts) const {
    record_all_reduce(ledger_, parts[0].r * parts[0].c, wire_);
    return parts[0];
  }

 private:
  Ledger& ledger_;
  DType wire_;
};

// ShardedIteration wants a communicator for its all-reduces; ShapeOps never passes data through
// it, so every call here is a bug.
class NoDataCommunicator final : public Communicator {
 public:
  explicit NoDataCommunicator(int ranks) { ledger_.ranks.resize(static_cast<std::size_t>(ranks)); }
  int size() const override { return static_cast<int>(ledger_.ranks.size()); }
  const Ledger& ledger() const override { return ledger_; }
  MatF all_reduce(const std::vector<MatF>&, DType) override { fail(); }
  MatD all_reduce(const std::vector<MatD>&, DType) override { fail(); }
  double all_reduce_scalar(const std::vector<double>&, DType) override { fail(); }
  MatD all_gather(const std::vector<MatD>&, int, DType) override { fail(); }
  std::vector<std::vector<MatD>> all_to_all(const std::vector<std::vector<MatD>>&, DType) override { fail(); }
  MatD broadcast(const MatD&, int, DType) override { fail(); }

 private:
  [[noreturn]] static void fail() { throw std::logic_error("cost model: a shape-only plan tried to move data"); }
  Ledger ledger_;
};

// Mirrors CpuBackend::newton_schulz_sharded (cpu_backend.cpp): one rank runs the whole kernel;
// otherwise the shards are put in the frame Y = [Y_1 ... Y_p] (split along Y's columns, the Gram
// over the unsharded axis), normalized with one scalar all-reduce, and iterated with the
// requested loop (the standard one when the Gram is square).
void plan_sharded_iteration(StrategyPlan& plan, const Layout& layout, std::int64_t rows, std::int64_t cols,
                            Iteration iteration, const NsConfig& cfg) {
  const int tp = layout.tp();
  if (tp == 1) {
    plan.flops[0] = ns_flops(cfg, rows, cols);
    return;
  }
  const std::int64_t gram_dim = layout.axis == 1 ? rows : cols;
  std::vector<Shape> y;
  std::int64_t other_dim = 0;
  for (int r = 0; r < tp; ++r) {
    y.push_back({gram_dim, layout.width(r)});
    other_dim += layout.width(r);
  }
  record_all_reduce(plan.ledger, 1, detail::norm_wire_dtype(cfg));  // normalize.cpp: the squared norm
  const Iteration chosen = gram_dim == other_dim ? Iteration::standard : iteration;
  ShapeOps ops(plan.ledger, cfg.dtype);
  NoDataCommunicator comm(tp);
  detail::ShardedIteration<ShapeOps> it(ops, &comm, cfg, y.size());
  it.run(y, chosen);
  plan.flops = it.flops_per_rank();
}

}  // namespace

void CostParams::validate() const {
  const auto got = [](double v) { return ", got " + std::to_string(v); };
  if (!(latency_us >= 0) || !std::isfinite(latency_us)) throw InvalidField("latency_us", "must be a finite number >= 0" + got(latency_us));
  if (!(link_gbps > 0) || !std::isfinite(link_gbps)) throw InvalidField("link_gbps", "must be a finite number > 0" + got(link_gbps));
  if (!(tflops > 0) || !std::isfinite(tflops)) throw InvalidField("tflops", "must be a finite number > 0" + got(tflops));
}

std::pair<std::int64_t, std::int64_t> shard_shape(const Layout& layout, std::int64_t rows, std::int64_t cols, int rank) {
  const std::int64_t w = layout.width(rank);
  return layout.axis == 0 ? std::pair{w, cols} : std::pair{rows, w};
}

StrategyPlan plan_strategy(Strategy s, const Layout& layout, std::int64_t rows, std::int64_t cols, std::int64_t head_dim,
                           const NsConfig& cfg, const StrategyOptions& opt) {
  cfg.validate();
  const int tp = layout.tp();
  if (tp < 1) throw std::invalid_argument("a layout needs at least one rank");
  if ((layout.axis == 0 ? rows : cols) != layout.dim)
    throw std::invalid_argument("layout covers " + std::to_string(layout.dim) + " along axis " + std::to_string(layout.axis) +
                                " but the matrix is " + std::to_string(rows) + "x" + std::to_string(cols));
  StrategyPlan plan = empty_plan(s, tp);
  const std::int64_t total = rows * cols;
  auto elements = [&](int r) {
    const auto [sr, sc] = shard_shape(layout, rows, cols, r);
    return sr * sc;
  };
  switch (s) {
    case Strategy::shard:  // NS on each non-empty shard, no communication
      for (int r = 0; r < tp; ++r) {
        const auto [sr, sc] = shard_shape(layout, rows, cols, r);
        plan.flops[static_cast<std::size_t>(r)] = sr * sc > 0 ? ns_flops(cfg, sr, sc) : 0;
      }
      break;
    case Strategy::gather: {  // one all-gather in the storage dtype, NS of the full matrix everywhere
      std::vector<std::int64_t> shard_elements;
      for (int r = 0; r < tp; ++r) shard_elements.push_back(elements(r));
      record_all_gather(plan.ledger, shard_elements, opt.storage);
      for (int r = 0; r < tp; ++r) {
        plan.flops[static_cast<std::size_t>(r)] = ns_flops(cfg, rows, cols);
        plan.extra_memory[static_cast<std::size_t>(r)] = bytes_of(total, opt.storage) * 2;
      }
      break;
    }
    case Strategy::per_head: {  // batched per-head NS on each head-aligned dim-0 shard
      if (const std::string why = inapplicable_reason(Strategy::per_head, layout, head_dim); !why.empty()) throw std::invalid_argument(why);
      for (int r = 0; r < tp; ++r) {
        const std::int64_t local_heads = layout.width(r) / head_dim;
        plan.flops[static_cast<std::size_t>(r)] = local_heads > 0 ? static_cast<std::uint64_t>(local_heads) * ns_flops(cfg, head_dim, cols) : 0;
      }
      break;
    }
    case Strategy::gram_allreduce:
    case Strategy::gram_restart_allreduce: {
      const Iteration it = s == Strategy::gram_allreduce ? Iteration::standard : Iteration::gram;
      plan_sharded_iteration(plan, layout, rows, cols, it, cfg);
      const std::int64_t n = layout.axis == 0 ? cols : rows;  // the unsharded axis: the Gram's size
      for (auto& e : plan.extra_memory) e = bytes_of(n * n * (it == Iteration::gram ? 3 : 2), cfg.dtype);
      break;
    }
    case Strategy::owner: return plan_owner(layout, rows, cols, cfg, opt, 0);
  }
  return plan;
}

StrategyPlan plan_owner(const Layout& layout, std::int64_t rows, std::int64_t cols, const NsConfig& cfg,
                        const StrategyOptions& opt, int owner_rank) {
  cfg.validate();
  const int tp = layout.tp();
  if (owner_rank < 0 || owner_rank >= tp) throw std::invalid_argument("owner rank out of range");
  // The owner receives every shard, runs NS once, and sends each rank its block back.
  StrategyPlan plan = empty_plan(Strategy::owner, tp);
  const auto owner = static_cast<std::size_t>(owner_rank);
  const auto n = static_cast<std::size_t>(tp);
  std::vector<std::vector<std::int64_t>> to_owner(n, std::vector<std::int64_t>(n, 0)), back = to_owner;
  for (std::size_t r = 0; r < n; ++r) {
    const auto [sr, sc] = shard_shape(layout, rows, cols, static_cast<int>(r));
    to_owner[r][owner] = sr * sc;
    back[owner][r] = sr * sc;
  }
  record_all_to_all(plan.ledger, to_owner, opt.storage);
  record_all_to_all(plan.ledger, back, opt.storage);
  plan.flops[owner] = ns_flops(cfg, rows, cols);
  plan.extra_memory[owner] = bytes_of(rows * cols, opt.storage) * 2;
  return plan;
}

RankCost rank_cost(const StrategyPlan& plan, int rank, const CostParams& cp) {
  const auto i = static_cast<std::size_t>(rank);
  RankCost c;
  const RankTraffic& t = plan.ledger.ranks.at(i);
  c.flops = plan.flops.at(i);
  c.bytes_sent = t.bytes_sent;
  c.bytes_received = t.bytes_received;
  c.messages = t.messages;
  c.extra_memory = plan.extra_memory.at(i);
  c.compute_s = static_cast<double>(c.flops) / (cp.tflops * 1e12);
  c.latency_s = static_cast<double>(c.messages) * cp.latency_us * 1e-6;
  c.bandwidth_s = static_cast<double>(std::max(c.bytes_sent, c.bytes_received)) / (cp.link_gbps * 1e9);
  return c;
}

std::vector<RankCost> rank_costs(const StrategyPlan& plan, const CostParams& cp) {
  std::vector<RankCost> out;
  for (int r = 0; r < static_cast<int>(plan.flops.size()); ++r) out.push_back(rank_cost(plan, r, cp));
  return out;
}

}  // namespace nsv
