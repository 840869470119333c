#pragma once
// Inputs of the Gram loop's half-precision failure (the stability study, reports/README.md): matrices
// with two rows (or two columns: both kernels iterate on the wide orientation) and a second
// singular value far below the first, the class holding DeepSpeed's first failing configuration;
// and the rank-1 example.
#include <rapidcheck.h>

#include "matrices.hpp"
#include "shapes.hpp"

namespace nsv::checks {

// 2 x m or m x 2, m in [4, 32].
inline rc::Gen<Shape> two_row_shapes() {
  return rc::gen::map(rc::gen::pair(rc::gen::inRange<Eigen::Index>(4, 33), rc::gen::arbitrary<bool>()), [](std::pair<Eigen::Index, bool> p) {
    return p.second ? Shape{2, p.first, ShapeKind::wide} : Shape{p.first, 2, ShapeKind::tall};
  });
}

// sigma_2 / sigma_1 = 10^-3 (ill_conditioned:3, the study's first failing spectrum).
inline rc::Gen<TestMatrix> two_row_matrices_with_a_tiny_singular_value() {
  Spectrum s;
  s.kind = Spectrum::Kind::ill_conditioned;
  s.log10_condition = 3;
  return matrices(two_row_shapes(), rc::gen::just(s));
}

// The example: rank 1, 2 x 16.
inline rc::Gen<TestMatrix> rank_one_2x16_matrices() {
  Spectrum s;
  s.kind = Spectrum::Kind::lowrank;
  s.rank = 1;
  return matrices_of(Shape{2, 16, ShapeKind::wide}, s);
}

}  // namespace nsv::checks
