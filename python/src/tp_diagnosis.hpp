#pragma once
// What a user's TP result computes: its distance to each semantics a TP result can have (whole,
// per-shard or per-head NS, times no, the global or the local aspect scale), and whether it is
// within rounding of it.
#include <pybind11/pybind11.h>

#include <vector>

#include "tp_cases.hpp"
#include "user_kernel.hpp"

namespace nsv::python {

// The S5 bound of a TP result against one semantics (sharding/allreduce_bound.hpp):
//     rel_diff(result, target) <= 2 S + N1
// S   the computation's own fp32-or-dtype error: the largest rel_diff(., its float64 result)
//     among equivalent evaluations. For the whole matrix: NS of it, NS of two row/column
//     permutations of it (permuted back), and both all-reduce loops (gram_allreduce,
//     gram_restart_allreduce) run with the whole matrix on one rank (the orientation the split
//     forces, no partial sums) — whichever loop the user's all-reduce runs, its own error is one
//     of these draws. For per-shard and per-head NS: the blocks' own error, assembled.
// N1  the reduction noise a split adds at the first step: rel_diff of both all-reduce loops on
//     this layout after one step against one step of NS of the whole matrix (whole target only;
//     per-shard and per-head NS communicate nothing).
// Why 2: the result and the target are two evaluations of one float64 map, each within S of it
// (plus N1 for the reduction, propagated like any other rounding error).
struct TpBound {
  double s = 0, n1 = 0;
  double value() const { return 2 * s + n1; }
};
TpBound tp_bound(const TpCase&, const MatD& g, Semantics, const NsConfig&);

struct CandidateDistance {
  Semantics semantics;
  AspectScale scale;
  double distance = 0, bound = 0;
  bool bit_identical = false;
  bool matches() const { return bit_identical || distance <= bound; }
};

// The distances of `outputs` (the user's blocks on case t) to every applicable semantics.
std::vector<CandidateDistance> distances(const TpCase&, const MatD& g, const std::vector<MatD>& outputs, const NsConfig&);

// The diagnosis over `count` cases sampled from the generator (seeded, reproducible).
pybind11::dict diagnose(const UserTpUpdate& fn, const NsConfig&, int max_tp, std::int64_t max_side, bool heads_on_rows,
                        int count, std::uint64_t seed);

}  // namespace nsv::python
