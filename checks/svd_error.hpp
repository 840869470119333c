#pragma once
// How far the singular values the bounds and the band read may be from the exact ones: the error
// theory of the two SVD routes of spectra.hpp (one-sided Jacobi in long double, LAPACK's dgesdd,
// and the Gram route through dsyrk and dsyevd), beside the rounding bounds of tolerances.hpp.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>

#include "nsv/dtype.hpp"

namespace nsv::checks {

// Above this many elements spectrum_for_the_bounds (spectra.hpp) takes the Gram route.
inline constexpr Eigen::Index kGramSpectrumMinElements = 128 * 128;
// Up to kJacobiMaxElements elements accurate_singular_values (spectra.hpp) runs one-sided Jacobi
// in long double (x87, u = 2^-64); above, dgesdd.
inline constexpr double kLongDoubleUnitRoundoff = 0x1p-64;
inline constexpr Eigen::Index kJacobiMaxElements = Eigen::Index{1} << 16;  // 256 x 256

// dgesdd's error in units of u64 sigma_max, p(n) in LAPACK's bound p(m, n) eps sigma_max (which
// leaves p unstated: "a modestly growing function"): n^2, n the long side, at least 16. n^2 covers
// the 46 u64 measured at n = 12 on an orthogonal NS output (n^2 = 144) and stays below 1e-7 up to
// n = 2^14; the floor covers small matrices, where the error does not shrink with n: on 40000
// gaussian and graded float32 matrices per row count, 1 x 2..3 reached 3.0 u, 2 x 2..4 6.1 u, 3 x
// 3..5 9.0 u, and 4..12 rows at most 8.2 u (n^2 alone was exceeded at 2 x 2 and 3 x 3).
inline double gesdd_error_factor(Eigen::Index rows, Eigen::Index cols) {
  const auto n = static_cast<double>(std::max(rows, cols));
  return std::max(n * n, 16.0);
}

// How far accurate_singular_values of a rows x cols matrix may be from the exact ones, relative
// to the largest: each is exact for X + E with ||E||_2 <= n u ||X||_2, n the long side, for
// one-sided Jacobi (Demmel & Veselic 1992, u = u_ld), then rounded to float64 (u64 more); for
// dgesdd gesdd_error_factor u64, which stays under the band's per-step rounding widening in fp32,
// bf16 and fp16 (>= 2 u_fp32 = 1.2e-7).
inline double svd_error(Eigen::Index rows, Eigen::Index cols) {
  const auto n = static_cast<double>(std::max(rows, cols));
  return rows * cols > kJacobiMaxElements ? gesdd_error_factor(rows, cols) * unit_roundoff(DType::fp64)
                                          : n * kLongDoubleUnitRoundoff + unit_roundoff(DType::fp64);
}

// How far spectrum_for_the_bounds of a rows x cols matrix may be from the exact singular values,
// relative to the largest: an absolute error on every value, the tiny ones included. dgesdd as
// above (n^2 u64). The Gram route: fl(A A^T) = A A^T + E with ||E||_2 <= n u ||A||_F^2
// <= n p u sigma_max^2, and dsyevd's eigenvalues are exact for a further perturbation of norm
// <= p^2 u sigma_max^2 (LAPACK's p(n) u ||.||, p(n) taken as n^2 as for dgesdd); so every
// sigma_i^2 moves by at most (n + p) p u sigma_max^2 (Weyl) and sigma_i by at most the square
// root of that: sqrt((n + p) p u64), 2.4e-5 at 1024 x 4096 and 9.1e-5 at 4096 x 14336 (the large
// singular values are far closer, ~(n + p) p u relative; this is the tiny ones' worst case).
inline double bounds_spectrum_error(Eigen::Index rows, Eigen::Index cols) {
  const auto n = static_cast<double>(std::max(rows, cols)), p = static_cast<double>(std::min(rows, cols));
  const double u = unit_roundoff(DType::fp64);
  return rows * cols <= kGramSpectrumMinElements ? n * n * u : std::sqrt((n + p) * p * u);
}

}  // namespace nsv::checks
