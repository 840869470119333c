#pragma once
// The bounds `nsv diagnose` judges a run by, each derived next to its code (diagnose_bounds.cpp),
// in the style of checks/tolerances.hpp.
#include "nsv/dtype.hpp"
#include "nsv/matrix.hpp"

namespace nsv::detail {

// e_delta: the relative error with which u = -(delta + lr wd w) / lr recovers the update the run
// applied, from the fp32 rounding of the parameter step and of the dump. weight may be null only
// when it is not needed (wd = 0 does not make it unneeded: |w| sets the step's rounding).
double delta_rounding(const MatD& delta, const MatD& weight, double weight_decay, DType delta_dtype);

// How far an observed update may lie from our recomputation of the semantics the run computed:
// 3 x the kernel's own fp64-oracle error + e_delta + one fp32 rounding of the aspect scale.
double match_bound(double own_error, double delta_rounding);

// How far the candidate's update may lie from the reference's when both computed the same
// semantics: what their own inputs' difference makes of it in fp64, plus both match bounds.
double invariance_bound(double input_difference, double reference_bound, double candidate_bound);

}  // namespace nsv::detail
