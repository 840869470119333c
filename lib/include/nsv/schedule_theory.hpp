#pragma once
// The scalar theory of a coefficient schedule, in exact (float64) arithmetic, no rounding.
//
// NS maps X = U diag(x) V^T to U diag(p(x)) V^T, p_k(x) = a x + b x^3 + c x^5 for step k's
// triple (c = 0: a cubic step), so everything a schedule does to a normalized singular value
// follows from its coefficients: the image of an interval of singular values after k steps, and
// the repelling fixed point beyond which a step only grows a singular value. The report's
// convergence band per schedule and the K5 properties' rounding-free band both come from here.
#include <vector>

#include "nsv/coeffs.hpp"

namespace nsv {

double scalar_step(const Coeffs&, double x);

struct ScalarInterval {
  double lo = 0, hi = 0;
};

// The image of [lo, hi] under one step's odd polynomial, exactly: the extremes are attained at
// the ends or at the critical points inside (roots of a + 3b y + 5c y^2 = 0, y = x^2; for c = 0
// the one root y = -a / (3b)).
ScalarInterval interval_image(const Coeffs&, ScalarInterval);

// The image folded onto the non-negative axis: where the singular values |p(x)| lie.
ScalarInterval singular_value_image(const Coeffs&, ScalarInterval);

// [lo, hi] after steps 0 .. steps-1 of the schedule, each through singular_value_image.
ScalarInterval schedule_band(const CoeffSchedule&, int steps, ScalarInterval);

// Bounds on the composed map phi = p_{steps-1} o ... o p_0 and its derivatives over [lo, hi]
// (0 <= lo <= hi): sup |phi'| and sup |phi''|. By the chain rule, with y_k the value after k steps,
//   phi_{k+1}'  = p_k'(y_k) phi_k',   phi_{k+1}'' = p_k''(y_k) phi_k'^2 + p_k'(y_k) phi_k''
// (phi_0' = 1, phi_0'' = 0), each factor at its largest over the interval y_k lies in: |y_k| lies in
// schedule_band's k-th interval, and p_k'(y) = a + 3b y^2 + 5c y^4 and |p_k''(y)| = |y| |6b + 20c y^2|
// depend on |y| alone, so their largest are at the ends or at the critical points y^2 =
// -3b / (10c) and y^2 = -b / (10c) inside. An upper bound (the sup of a product is at most the
// product of the sups); exact where every interval holds 0 and the steps' derivatives peak there.
struct MapDerivativeBounds {
  double first = 1.0, second = 0.0;
};
MapDerivativeBounds map_derivative_bounds(const CoeffSchedule&, int steps, ScalarInterval);

// The repelling fixed point of the singular-value map |p|: the largest x > 0 with |p(x)| = x,
// beyond which |p(x)| > x and the iteration only grows; +inf when there is none. With y = x^2 it
// solves p(x) = x (c y^2 + b y + (a - 1) = 0: where a quintic, c > 0, turns up) or p(x) = -x
// (c y^2 + b y + (a + 1) = 0: where a cubic, c = 0 and b < 0, falls below -x).
double repelling_fixed_point(const Coeffs&);

}  // namespace nsv
