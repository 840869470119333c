#pragma once
// The cases the MPI properties draw: a matrix split on either axis over the group's tp ranks by
// any split rule (uneven, zero-width ranks), or an attention projection under GQA with heads on
// dim 0; a kernel, a dtype, a step count and a reduction order. Every random choice is an
// rc::gen draw (tiers.hpp's `sample`), made identically on every process from the same seed, so
// no case needs broadcasting and a failure replays from its seed and index.
#include <rapidcheck.h>

#include <cstdint>
#include <ostream>

#include "sharding/layout_generators.hpp"
#include "generators/configs.hpp"
#include "nsv/communicator.hpp"
#include "nsv/kernels.hpp"

namespace nsv::checks::mpi {

struct MpiCase {
  bool heads = false;         // an attention projection (head_case), else a plain matrix (shard_case)
  shard::ShardCase shard_case;
  shard::HeadCase head_case;
  NsConfig cfg;
  ReductionOrder order = ReductionOrder::rank;

  MatD matrix() const { return heads ? head_case.matrix() : shard_case.matrix(); }
  Layout layout() const { return heads ? head_case.layout() : shard_case.layout(); }
  std::int64_t head_dim() const { return heads ? head_case.head_dim : 0; }
  int axis() const { return heads ? 0 : shard_case.axis; }
  std::uint64_t seed() const { return heads ? head_case.seed : shard_case.seed; }
};

inline void showValue(const MpiCase& c, std::ostream& os) {
  if (c.heads)
    shard::showValue(c.head_case, os);
  else
    shard::showValue(c.shard_case, os);
  os << "; " << kernel_name(c.cfg.kernel) << " kernel, " << dtype_name(c.cfg.dtype) << ", " << c.cfg.steps
     << " steps, order " << reduction_order_name(c.order);
}

inline rc::Gen<ReductionOrder> reduction_orders() {
  return rc::gen::elementOf(kAllReductionOrders);
}

// Cases for a group of exactly `tp` ranks, sides up to `max_side`.
inline rc::Gen<MpiCase> mpi_cases(int tp, std::int64_t max_side) {
  const rc::Gen<int> fixed_tp = rc::gen::just(tp);
  return rc::gen::map(
      rc::gen::tuple(rc::gen::inRange(0, 3), shard::shard_cases(fixed_tp, 1, max_side), shard::head_cases(fixed_tp, max_side),
                     kernels(), dtypes(), rc::gen::inRange(1, 6), reduction_orders()),
      [](const std::tuple<int, shard::ShardCase, shard::HeadCase, Kernel, DType, int, ReductionOrder>& t) {
        const auto& [kind, sc, hc, kernel, dtype, steps, order] = t;
        MpiCase c;
        c.heads = kind == 0;  // one case in three is a GQA projection
        c.shard_case = sc;
        c.head_case = hc;
        c.cfg.kernel = kernel;
        c.cfg.dtype = dtype;
        c.cfg.steps = steps;
        c.order = order;
        return c;
      });
}

}  // namespace nsv::checks::mpi
