// Operand::sharded_frame: the ranks run one NS iteration over their shards together, the Gram
// matrix over the unsharded axis all-reduced (sharded_frame.hpp), the loop forced by the record
// (gram_allreduce: the standard loop, an all-reduce per step; gram_restart_allreduce: the Gram
// loop, an all-reduce at the start and at each restart).
//
// The plan runs the very iteration of the backends (ns_algorithm.hpp) on shapes instead of
// matrices, so its collectives and FLOPs are those of a run by construction, in O(steps) time for
// any size.
#include "normalize.hpp"
#include "ns_algorithm.hpp"
#include "nsv/strategies.hpp"
#include "operand.hpp"
#include "sharded_frame.hpp"

namespace nsv::detail {
namespace {

// The Ops of ns_algorithm.hpp on shapes (a matrix is its ShardShape): products give the
// product's shape, and an all-reduce is counted into the ledger through the communicator's byte
// model, in the compute dtype as the data backends send it.
class ShapeOps {
 public:
  using Shape = ShardShape;
  using Matrix = Shape;
  using Scalar = double;

  ShapeOps(Ledger& ledger, DType wire) : ledger_(ledger), wire_(wire) {}

  Scalar scalar(double v) const { return v; }
  std::int64_t rows(const Shape& m) const { return m.rows; }
  std::int64_t cols(const Shape& m) const { return m.cols; }
  Shape gram(const Shape& y) const { return {y.rows, y.rows}; }
  Shape square(const Shape& s, Scalar) const { return {s.rows, s.rows}; }
  Shape symmetric_product(const Shape& a, const Shape&) const { return {a.rows, a.rows}; }
  Shape matmul(const Shape& a, const Shape& b) const { return {a.rows, b.cols}; }
  Shape lincomb(Scalar, const Shape& x, Shape) const { return x; }
  void add_diagonal(Shape&, Scalar) const {}
  void recycle(Shape&&) const {}
  bool communicates() const { return ledger_.ranks.size() > 1; }
  Shape all_reduce(const std::vector<Shape>& parts) const {
    record_all_reduce(ledger_, parts[0].rows * parts[0].cols, wire_);
    return parts[0];
  }

 private:
  Ledger& ledger_;
  DType wire_;
};

StrategyPlan plan(const StrategyRecord& rec, const PlanShape& m, const NsConfig& cfg, const StrategyOptions&) {
  const int tp = m.layout.tp();
  StrategyPlan p = empty_plan(rec.strategy, tp);
  std::vector<ShardShape> shards;
  for (int r = 0; r < tp; ++r) {
    const auto [rows, cols] = m.shard(r);
    shards.push_back({rows, cols});
  }
  const ShardedFrame frame = sharded_frame(cfg, m.layout.axis, shards, tp, m.layout.dim, rec.iteration);
  std::vector<ShardShape> y;
  for (const ShardShape& s : shards) y.push_back(frame.transpose ? ShardShape{s.cols, s.rows} : s);
  if (tp > 1) record_all_reduce(p.ledger, 1, norm_wire_dtype(cfg));  // normalize.cpp: the squared norm
  ShapeOps ops(p.ledger, cfg.dtype);
  ShardedIteration<ShapeOps> it(ops, cfg, y.size());
  it.run(y, frame.iteration);
  p.flops = it.flops_per_rank();
  // Every rank holds the replicated Gram matrix and the polynomial (and Q in the Gram loop).
  const std::int64_t n = m.layout.axis == 0 ? m.cols : m.rows;  // the unsharded axis: the Gram's side
  for (auto& e : p.extra_memory) e = bytes_of(n * n * (rec.iteration == Iteration::gram ? 3 : 2), cfg.dtype);
  return p;
}

std::vector<MatD> execute(const StrategyRecord& rec, const Backend& b, const ShardedMatrix& m, const NsConfig& cfg,
                          const StrategyOptions&, Communicator& comm) {
  return on_ranks(comm, m.layout.tp(),
                  b.newton_schulz_hosted(hosted_shards(comm, m), m.layout.axis, m.layout.dim, rec.iteration, comm, cfg)
                      .shards);
}

}  // namespace

const OperandImpl kShardedFrame{plan, execute};

}  // namespace nsv::detail
