#include "diagnose_bounds.hpp"

#include "nsv/analysis/diagnose.hpp"

#include <cmath>

namespace nsv {
namespace detail {

// The run stepped p' = fl(p (1 - lr wd) - lr u) in fp32 and dumped delta = fl(p' - p) (then
// rounded to the dump's dtype). Per element, with u32 = 2^-24:
//   the product lr u, or its fusion into the sum:   <= u32 |lr u|
//   the sum p' (rounded once):                       <= u32 |p'| <= u32 (|p| + |lr u|)
//   the decay p (1 - lr wd), when wd > 0:            <= u32 |p|
//   the difference p' - p:                           <= u32 |delta|
//   the dump, narrower than fp32:                    <= u_dump |delta|
// To first order |delta| = |lr u| (wd = 0) and the Frobenius norm of the sum of the elementwise
// bounds is at most the sum of the norms, so relative to ||lr u|| = ||delta||:
//   e_delta = u32 ((1 + [wd > 0]) ||w|| / ||delta|| + 3) + u_dump.
// Large weights under small steps make it large (||w|| / ||delta|| is about 16 for the tiny
// Llama at lr 0.02), which is why the weights before the step belong in the dump.
double delta_rounding(const MatD& delta, const MatD& weight, double weight_decay, DType delta_dtype) {
  const double u32 = unit_roundoff(DType::fp32);
  const double u_dump = delta_dtype == DType::fp32 || delta_dtype == DType::fp64 ? 0.0 : unit_roundoff(delta_dtype);
  const double d = delta.norm();
  if (d == 0) return 0;
  return u32 * ((weight_decay > 0 ? 2.0 : 1.0) * weight.norm() / d + 3.0) + u_dump;
}

}  // namespace detail

const std::string_view kMatchBoundDerivation =
    "3 e_own + e_delta + u32. The run's kernel and ours perform the same operations in fp32 with "
    "sums in different orders: two draws of one rounding-noise process around the fp64 map. Ours "
    "lies e_own from it (measured on this input against our fp64 run of the same semantics); the "
    "run's lies within 2 e_own (the factor 2 of the golden_fp32 row of checks/tolerances.hpp, "
    "which measured DeepSpeed's distance at 0.43..1.44 x ours), so the two lie within 3 e_own of "
    "each other. e_delta bounds the rounding of w_after - w_before (delta_rounding), u32 the one "
    "fp32 product by the aspect scale. Inputs are the run's own dumped gradient and momentum, so "
    "the blend is the run's to the bit when both use PyTorch's fused lerp.";
namespace detail {

double match_bound(double own_error, double e_delta) { return 3.0 * own_error + e_delta + unit_roundoff(DType::fp32); }

}  // namespace detail

const std::string_view kInvarianceBoundDerivation =
    "d64 + bound_reference + bound_candidate. Each run's update lies within its match bound of our "
    "recomputation of the semantics from its own inputs, and those two recomputations, in fp64, "
    "differ by d64 (what the difference of the runs' gradients and momenta, e.g. the order of "
    "TP all-reduces, makes of the update). The triangle inequality gives the sum.";
namespace detail {

double invariance_bound(double input_difference, double reference_bound, double candidate_bound) {
  return input_difference + reference_bound + candidate_bound;
}

}  // namespace detail
}  // namespace nsv
