#pragma once
// The scalar theory of NS on a matrix: the scalar map on each normalized singular value, K5's
// convergence band with its rounding derivation, the conditioning of the map, and the spectra K5
// compares. The regime and the premises judged from them: premises.hpp.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "nsv/kernels.hpp"
#include "nsv/schedule_theory.hpp"
#include "spectra.hpp"

namespace nsv::checks {


// The scalar map NS applies to each normalized singular value: p_k(x) = a x + b x^3 + c x^5 for
// the schedule's step k (scalar_step, nsv/schedule_theory.hpp), composed over the steps.
inline double scalar_map(const NsConfig& cfg, double x) {
  for (int s = 0; s < cfg.steps; ++s) x = scalar_step(cfg.coeffs.at_step(s), x);
  return x;
}

// K5's band: where the singular values of NS(G) may lie, given the input's normalized singular
// values x_i and a per-step rounding perturbation.
//
// Derivation. In exact arithmetic NS maps X = U diag(x) V^T to U diag(p(x)) V^T (p odd), so the
// output's singular values are |phi(x_i)|, phi = p_{steps-1} o ... o p_0. In floating point the
// computed iterate after step k is f_k(X~_k) + E_k. By Weyl's inequality every singular value
// of f_k(X~_k) + E_k is within ||E_k||_2 of one of f_k(X~_k)'s, matched one to one; so if each
// x_i is tracked as an interval I_i and each step maps I_i through |p_k| (exactly: ends and
// critical points) and widens it by delta_k >= ||E_k||_2, the computed singular values stay in
// the union of the I_i. The band is that union's hull.
//
// delta_k = kappa_k * u_eff * h_k with
//   h_k     the largest singular value the intervals allow at step k (at least 1),
//   u_eff   u_dtype + sqrt(n) * u_accumulate: one rounding of every matrix result to the compute
//           dtype plus the accumulation error of an inner product of length n (probabilistic
//           sqrt(n) growth, Higham & Mary 2019; n = the long side, the longest inner product),
//   kappa_k 2 (|a| + |b| + |c|) of step k's coefficients: every rounded stage of a step is a
//           term of a X + b A X + c A^2 X, whose sizes relative to h are |a|, |b|, |c| (for
//           h <= 1); the factor 2 counts each product's rounding and its accumulation.
// The gram kernel iterates on R = X X^T (and Q, a polynomial in R) and forms X only at the
// restart and at the end, so its errors live on the squares of the singular values: an error
// eps h^2 in R moves sigma^2 by at most eps h^2 (Weyl on R), hence sigma by at most
// sqrt(eps) h. Its delta_k is therefore h sqrt(kappa_k u_eff) (the larger of the two).
// The initial interval is x_i (1 +- (3 u_norm + sqrt(m n) u64 / 2)) +- u_dtype: the squared norm
// is a float64 sum of m n squares, the norm, the + eps and the quotient are rounded in the
// normalization dtype, the normalized values once more to the compute dtype.
// The singular values compared are computed by accurate_singular_values: each is within
// svd_error ||X||_2 of an exact one (the svd slack below, on the input's and the output's singular
// values). Where the spectra come from another SVD, spectrum_error is its error relative to the
// largest value instead (first_order_regime_by_the_bounds_spectrum, band_spectra).
struct Band {
  double lo = 0, hi = 0;
};

inline double u_accumulate(const NsConfig& cfg) {
  if (cfg.dtype == DType::fp64) return unit_roundoff(DType::fp64);
  return cfg.accumulate == Accumulate::fp32 ? unit_roundoff(DType::fp32) : unit_roundoff(cfg.dtype);
}

// u_eff = u_dtype + sqrt(n) u_acc for a configuration and an inner dimension n (see the band's
// derivation above; B(G) in tolerances.hpp uses the same).
inline double effective_unit_roundoff(const NsConfig& cfg, Eigen::Index n) {
  return unit_roundoff(cfg.dtype) + std::sqrt(static_cast<double>(n)) * u_accumulate(cfg);
}

// kappa_k u_eff: the rounding a step with coefficients k adds, relative to h (the band's
// derivation above).
inline double step_rounding(const Coeffs& k, double u_eff) {
  return 2 * (std::abs(k.a) + std::abs(k.b) + std::abs(k.c)) * u_eff;
}

// x: the normalized singular values; inner_dim: the long side; square: the gram kernel runs
// the standard loop on square matrices.
inline Band convergence_band(const Eigen::VectorXd& x, const NsConfig& cfg, Eigen::Index inner_dim, bool square,
                             bool with_rounding = true, std::optional<double> spectrum_error = std::nullopt) {
  const double u = unit_roundoff(cfg.dtype);
  const double u_norm = unit_roundoff(normalization_dtype(cfg));
  const double u_eff = effective_unit_roundoff(cfg, inner_dim);
  // the squared norm is a float64 sum of m n squares (probabilistic sqrt(m n) growth), halved
  // by the square root
  const double norm_sum_error = std::sqrt(static_cast<double>(x.size() * inner_dim)) * unit_roundoff(DType::fp64) / 2;
  // the input's singular values come from the same SVD: the same slack on them
  const double svd_relative = svd_error(x.size(), inner_dim);
  const double svd_slack_in = spectrum_error.value_or(svd_relative) * (x.size() ? x.maxCoeff() : 0.0);
  std::vector<ScalarInterval> iv;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const double w = with_rounding ? x(i) * (3 * u_norm + norm_sum_error) + u + svd_slack_in : 0.0;
    iv.push_back({std::max(0.0, x(i) - w), x(i) + w});
  }
  for (int s = 0; s < cfg.steps; ++s) {
    const Coeffs& k = cfg.coeffs.at_step(s);
    double h = 1.0;
    for (const auto& i : iv) h = std::max(h, i.hi);
    const double kappa_u = step_rounding(k, u_eff);
    const bool gram_loop = cfg.kernel == Kernel::gram && x.size() > 0 && !square;
    const double delta = !with_rounding ? 0.0 : (gram_loop ? std::max(kappa_u, std::sqrt(kappa_u)) * h : kappa_u * h);
    for (auto& i : iv) {
      const ScalarInterval folded = singular_value_image(k, i);  // singular values are |p(x)|
      i = {std::max(0.0, folded.lo - delta), folded.hi + delta};
    }
  }
  Band b{std::numeric_limits<double>::infinity(), 0.0};
  for (const auto& i : iv) {
    b.lo = std::min(b.lo, i.lo);
    b.hi = std::max(b.hi, i.hi);
  }
  if (iv.empty()) b.lo = 0;
  if (with_rounding) {
    const double svd_slack = spectrum_error.value_or(svd_relative) * b.hi;
    b.lo = std::max(0.0, b.lo - svd_slack);
    b.hi += svd_slack;
  }
  return b;
}

// The conditioning of NS at G: a bound on how much the map X -> NS(X) (X normalized) can
// magnify a perturbation, in the Frobenius norm.
//
// NS acts on singular values only, f(U diag(x) V^T) = U diag(phi(x)) V^T with phi odd, and the
// Frechet derivative of such a singular-value function is bounded by the largest of
//   phi'(x_i),  (phi(x_i) - phi(x_j)) / (x_i - x_j),  (phi(x_i) + phi(x_j)) / (x_i + x_j),
// taken over the singular values, with x_j = 0 included when the matrix is rectangular (the
// directions outside its row or column space) and phi'(0) = prod(a_k) when it is rank-deficient
// (Noferini 2017, generalized matrix functions; the divided differences are the "Daleckii-Krein"
// coefficients). It is ~1-4 for well-spread spectra and grows to prod(a_k) (486 for keller x 5)
// when a singular value is tiny: that direction is amplified by the iteration itself.
inline double ns_conditioning(const Eigen::VectorXd& x, const NsConfig& cfg, bool rectangular) {
  auto phi = [&](double v) { return scalar_map(cfg, v); };
  auto dphi = [&](double v) {  // derivative of the composition by the chain rule
    double d = 1.0;
    for (int s = 0; s < cfg.steps; ++s) {
      const Coeffs& k = cfg.coeffs.at_step(s);
      const double v2 = v * v;
      d *= k.a + v2 * (3 * k.b + 5 * k.c * v2);
      v = scalar_step(k, v);
    }
    return d;
  };
  constexpr double tiny = 1e-12;  // below this a singular value counts as zero (rank-deficient)
  std::vector<double> xs;
  bool deficient = false;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    if (x(i) > tiny) xs.push_back(x(i));
    else deficient = true;
  }
  std::vector<double> phis(xs.size());  // phi once per value, not once per pair
  for (std::size_t i = 0; i < xs.size(); ++i) phis[i] = phi(xs[i]);
  double lip = 0.0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    lip = std::max(lip, std::abs(dphi(xs[i])));
    if (rectangular || deficient) lip = std::max(lip, std::abs(phis[i] / xs[i]));
    for (std::size_t j = 0; j < i; ++j) {
      lip = std::max(lip, std::abs(phis[i] + phis[j]) / (xs[i] + xs[j]));
      if (std::abs(xs[i] - xs[j]) > 1e-6 * xs[i]) lip = std::max(lip, std::abs(phis[i] - phis[j]) / std::abs(xs[i] - xs[j]));
    }
  }
  if (deficient) lip = std::max(lip, std::abs(dphi(0.0)));
  return std::max(lip, 1.0);
}

// What K5 compares: the input's normalized singular values x, the output's singular values sigma,
// and their error relative to the largest (the band's svd slack; unset: svd_error's). From the
// spectrum the bounds use (remembered: the premise has asked for both already) where its error
// (bounds_spectrum_error) is at most the rounding the band's first step adds anyway (kappa_0
// u_eff h): it then widens the band by no more than rounding does (fp32 at 1024 x 4096: 2.4e-5
// against 8.0e-5; at 4096 x 14336, 9.1e-5 against 1.5e-4). Else (fp64, whose rounding is far
// below the Gram route's error) from accurate_singular_values, at the cost of two SVDs of the
// matrix's size.
struct BandSpectra {
  Eigen::VectorXd x, sigma;
  std::optional<double> error;
};
inline BandSpectra band_spectra(const MatD& g, const MatD& out, const NsConfig& cfg) {
  const double cheap_error = bounds_spectrum_error(g.rows(), g.cols());
  if (cfg.steps == 0 ||
      cheap_error > step_rounding(cfg.coeffs.at_step(0), effective_unit_roundoff(cfg, std::max(g.rows(), g.cols()))))
    return {normalized_singular_values(g, cfg.eps), accurate_singular_values(out), std::nullopt};
  remember_both(g, out);
  return {normalized_spectrum(g, cfg), remembered_singular_values(out), cheap_error};
}

}  // namespace nsv::checks
