#pragma once
// Standard normal values from RapidCheck integers, and the Haar-random orthonormal columns built
// from them: the random ingredients of the matrix and transform generators.
//
// Every random choice goes through rc::gen, so every generated value shrinks and replays from
// RapidCheck's seed. Nothing here calls std::rand, <random> or Eigen::Random.
//
// Gaussian values come from one uniform integer each, mapped through the inverse normal CDF:
// an integer j in [-2^20, 2^20] becomes Phi^-1((j + 2^20 + 1/2) / (2^21 + 1)). The grid is fine
// (2^21 + 1 points) and covers |z| <= 4.9; j = 0 maps to exactly 0, so a shrinking integer shrinks
// the value towards 0 and a fully shrunk matrix is the zero matrix.
#include <rapidcheck.h>

#include <Eigen/Core>
#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "nsv/matrix.hpp"

namespace nsv::checks {

// A uniform integer in [-n, n] that shrinks towards 0: draw k in [0, 2n] from the full range
// (gen::resize pins the size, so small sizes do not collapse the range onto its minimum) and
// unfold it 0, -1, 1, -2, 2, ... (zig-zag), so that shrinking k towards 0 shrinks |j| too.
inline rc::Gen<std::int64_t> centered_integer(std::int64_t n) {
  return rc::gen::map(rc::gen::resize(100, rc::gen::inRange<std::int64_t>(0, 2 * n + 1)),
                      [](std::int64_t k) { return (k % 2 == 0) ? k / 2 : -(k + 1) / 2; });
}

// Inverse of the standard normal CDF: Acklam's rational approximation (relative error 1.2e-9)
// refined by one Halley step on erfc (then accurate to ~1e-15 over the grid we use).
inline double inverse_normal_cdf(double p) {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                 1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01,  -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                 3.754408661907416e+00};
  if (!(p > 0.0 && p < 1.0)) throw std::invalid_argument("inverse_normal_cdf: p must be in (0, 1)");
  constexpr double p_low = 0.02425;
  double x;
  if (p < p_low) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - p_low) {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    const double q = std::sqrt(-2 * std::log1p(-p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

inline constexpr std::int64_t kGaussianGridHalfWidth = std::int64_t{1} << 20;

// The standard normal value of grid point j (see the header comment); j = 0 gives exactly 0.
inline double gaussian_from_grid(std::int64_t j) {
  if (j == 0) return 0.0;
  const double n = static_cast<double>(kGaussianGridHalfWidth);
  return inverse_normal_cdf((static_cast<double>(j) + n + 0.5) / (2 * n + 1));
}

// The grid points of `count` standard normal values, and the values of grid points.
inline rc::Gen<std::vector<std::int64_t>> gaussian_grid(std::size_t count) {
  return rc::gen::container<std::vector<std::int64_t>>(count, centered_integer(kGaussianGridHalfWidth));
}
inline std::vector<double> gaussians_of(const std::vector<std::int64_t>& grid) {
  std::vector<double> z(grid.size());
  std::transform(grid.begin(), grid.end(), z.begin(), gaussian_from_grid);
  return z;
}

// Standard normal values, one uniform integer each.
inline rc::Gen<std::vector<double>> gaussians(std::size_t count) { return rc::gen::map(gaussian_grid(count), gaussians_of); }

namespace detail {

// Consumes standard normal values in order.
struct NormalStream {
  const std::vector<double>& z;
  std::size_t next = 0;
  MatD matrix(Eigen::Index rows, Eigen::Index cols) {
    MatD m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = z.at(next++);
    return m;
  }
};

// The Q factor of a gaussian matrix, with the signs of R's diagonal folded in so that it is
// Haar-distributed (Mezzadri 2007). rows >= cols; the columns are orthonormal.
inline MatD orthonormal_columns(const MatD& gaussian) {
  const Eigen::MatrixXd g = gaussian;
  Eigen::HouseholderQR<Eigen::MatrixXd> qr(g);
  Eigen::MatrixXd q = qr.householderQ() * Eigen::MatrixXd::Identity(g.rows(), g.cols());
  const Eigen::MatrixXd r = qr.matrixQR();
  for (Eigen::Index j = 0; j < g.cols(); ++j)
    if (r(j, j) < 0) q.col(j) *= -1.0;
  return q;
}

}  // namespace detail
}  // namespace nsv::checks
