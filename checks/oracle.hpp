#pragma once
// The float64 oracles the bounded properties measure against, and the scalar theory of NS.
//
// The kernel in float64 is the oracle for every narrower dtype: its own rounding (u = 2^-53) is
// 10^8 times below fp32's, so the difference between a dtype's result and the float64 result on
// the same input is that dtype's own error (the "kernel's own error" the tolerances scale).
#include <Eigen/Core>
#include <Eigen/SVD>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <iomanip>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "nsv/backend.hpp"
#include "nsv/kernels.hpp"
#include "nsv/lapack_spectra.hpp"
#include "nsv/metrics.hpp"
#include "nsv/schedule_theory.hpp"

namespace nsv::props {

inline const Backend& cpu() {
  static const std::unique_ptr<Backend> backend = make_cpu_backend();
  return *backend;
}

inline MatD ns(const MatD& g, const NsConfig& cfg) { return newton_schulz(cpu(), g, cfg); }

// Independent reference runs side by side, each on its own OpenMP thread with OpenBLAS pinned to
// one, so each has the bits it has alone (the reference's K10 and K7-bitwise claims, checked in the
// gate) in a fraction of the wall time: a batch of one configuration, or two configurations (the
// float64 oracle beside a narrower run). An exception inside a run is rethrown on the caller's thread.
// Only runs of at least kSideBySideMinElements go side by side: below, an OpenMP team's start and
// join outweigh the run, and on a loaded machine they can cost a scheduler time slice each, which
// the thousands of small runs of a shrinking counterexample would pay. The bits are the same
// either way.
inline constexpr Eigen::Index kSideBySideMinElements = Eigen::Index{1} << 16;  // 256 x 256
inline Batch ns_batch(const Batch& inputs, const NsConfig& cfg) {
  const bool large = std::all_of(inputs.begin(), inputs.end(), [](const MatD& x) { return x.size() >= kSideBySideMinElements; });
  if (large) return cpu().newton_schulz(inputs, cfg);
  Batch out;
  for (const MatD& x : inputs) out.push_back(ns(x, cfg));
  return out;
}
// {a(), b()}, each on its own OpenMP thread where `large` (else one after the other); an
// exception inside either is rethrown on the caller's thread.
template <class A, class B>
auto side_by_side(bool large, const A& a, const B& b) {
  std::invoke_result_t<A> ra;
  std::invoke_result_t<B> rb;
  std::exception_ptr failed[2];
#pragma omp parallel sections num_threads(2) if (large)
  {
#pragma omp section
    try {
      ra = a();
    } catch (...) {
      failed[0] = std::current_exception();
    }
#pragma omp section
    try {
      rb = b();
    } catch (...) {
      failed[1] = std::current_exception();
    }
  }
  for (const auto& f : failed)
    if (f) std::rethrow_exception(f);
  return std::pair{std::move(ra), std::move(rb)};
}

inline NsConfig with_dtype(NsConfig cfg, DType d) {
  cfg.dtype = d;
  if (d == DType::fp64) cfg.accumulate = Accumulate::fp32;  // fp64 accumulates in fp64
  return cfg;
}
inline NsConfig with_kernel(NsConfig cfg, Kernel k) {
  cfg.kernel = k;
  return cfg;
}
inline NsConfig oracle_config(const NsConfig& cfg) { return with_dtype(cfg, DType::fp64); }


// The scalar map NS applies to each normalized singular value: p_k(x) = a x + b x^3 + c x^5 for
// the schedule's step k (scalar_step, nsv/schedule_theory.hpp), composed over the steps.
inline double scalar_map(const NsConfig& cfg, double x) {
  for (int s = 0; s < cfg.steps; ++s) x = scalar_step(cfg.coeffs.at_step(s), x);
  return x;
}

// Singular values for the bounds' spectral functions (L(G), F(G), ||NS(G)||: tolerances.hpp) and
// for divergence (the largest of an output), decreasing. Up to kGramSpectrumMinElements elements
// float64 dgesdd (values only). Above it the square roots of the eigenvalues of the short side's
// Gram matrix A A^T (nsv/lapack_spectra.hpp: dsyrk and dsyevd, values only; cheaper than dgesdd,
// and it runs several times per case). Error: fl(A A^T) =
// A A^T + E with ||E||_2 <= gamma_n ||A||_F^2 and the eigensolver is backward stable (c p u
// ||A A^T||_2), so every sigma_i^2 is within (n + c p) u ||A||_F^2 <= (n + c p) p u sigma_max^2:
// the largest singular values, those near 1 that decide divergence and ||NS(G)||, to ~n p u
// relative (1e-10 at 512 x 1024, far inside every margin they are compared with); a tiny one to at
// most sqrt((n + c p) p u) sigma_max, where L and F no longer see it (they depend on a tiny x only
// through phi(x) / x and phi'(x), both prod(a_k) + O(x^2)).
inline constexpr Eigen::Index kGramSpectrumMinElements = 128 * 128;
inline Eigen::VectorXd spectrum_for_the_bounds(const MatD& a) {
  return a.size() <= kGramSpectrumMinElements ? singular_values(a) : gram_singular_values(a);
}

// spectrum_for_the_bounds(g), remembered for the last few matrices of this thread: one case asks
// for its input's spectrum several times (B(G) of each compared computation, the distance
// relative to the map, K3's transform rounding). Keyed by the values themselves (compared in
// full, not by a hash), so a hit is the same matrix.
struct RememberedSpectrum {
  MatD matrix;
  Eigen::VectorXd values;
};
inline std::vector<RememberedSpectrum>& remembered_spectra() {
  thread_local std::vector<RememberedSpectrum> entries;
  return entries;
}
// g's remembered spectrum, or nullptr where it has none.
inline const Eigen::VectorXd* already_remembered(const MatD& g) {
  for (const RememberedSpectrum& e : remembered_spectra())
    if (e.matrix.rows() == g.rows() && e.matrix.cols() == g.cols() &&
        std::memcmp(e.matrix.data(), g.data(), sizeof(double) * static_cast<std::size_t>(g.size())) == 0)
      return &e.values;
  return nullptr;
}
inline void remember(const MatD& g, Eigen::VectorXd values) {
  constexpr std::size_t kRemembered = 3;
  std::vector<RememberedSpectrum>& entries = remembered_spectra();
  if (entries.size() == kRemembered) entries.erase(entries.begin());
  entries.push_back({g, std::move(values)});
}
inline Eigen::VectorXd remembered_singular_values(const MatD& g) {
  if (const Eigen::VectorXd* known = already_remembered(g)) return *known;
  remember(g, spectrum_for_the_bounds(g));
  return remembered_spectra().back().values;
}
// Both spectra remembered, those not yet known computed side by side (each its own Gram matrix and
// eigensolver on one thread, the same bits as alone), then remembered on this thread: the cache
// is the caller's thread's, not the helper's. K5 at 512 x 1024 spends most of its own time here.
inline void remember_both(const MatD& a, const MatD& b) {
  if (already_remembered(a)) {
    remembered_singular_values(b);
    return;
  }
  if (already_remembered(b)) {
    remembered_singular_values(a);
    return;
  }
  // side by side from 2^27 multiply-adds of the Gram matrix each (about 1 ms), as row_panels.hpp
  const auto large = [](const MatD& m) { return static_cast<double>(m.size()) * std::min(m.rows(), m.cols()) >= 0x1p27; };
  auto [sa, sb] = side_by_side(large(a) && large(b), [&] { return spectrum_for_the_bounds(a); },
                               [&] { return spectrum_for_the_bounds(b); });
  remember(a, std::move(sa));
  remember(b, std::move(sb));
}

// G's singular values divided by ||G||_F + eps from the spectrum above: what L(G) and F(G) are
// computed from (tolerances.hpp), and the cheap premise and band tests below. L(G) needs the
// spectrum's shape, not its last bits: the fast float64 SVD is enough there.
inline Eigen::VectorXd normalized_spectrum(const MatD& g, const NsConfig& cfg) {
  const double norm = std::sqrt(g.cwiseAbs2().sum());
  return g.size() ? Eigen::VectorXd(remembered_singular_values(g) / (norm + cfg.eps)) : Eigen::VectorXd();
}

// Singular values, decreasing, for the band (K5) and the premises judged from the spectrum.
// Up to kJacobiMaxElements elements: one-sided Jacobi in long double (x87, u = 2^-64). Float64
// SVDs are too coarse for the float64 rows there: Eigen's BDCSVD and JacobiSVD<double> both put a
// singular value of an orthogonal 12 x 12 NS output at 1 + 5.1e-15 (46 u64) where the long double
// Jacobi gives 1 + 2.2e-16. It is O(n^3) in x87 arithmetic, too slow above 256 x 256, so larger
// matrices take LAPACK's dgesdd (values only), whose
// error the band then counts as gesdd_error_factor u64 (svd_error below).
inline constexpr double kLongDoubleUnitRoundoff = 0x1p-64;
inline constexpr Eigen::Index kJacobiMaxElements = Eigen::Index{1} << 16;  // 256 x 256
inline Eigen::VectorXd accurate_singular_values(const MatD& m) {
  using MatLD = Eigen::Matrix<long double, Eigen::Dynamic, Eigen::Dynamic>;
  if (m.size() == 0) return {};
  if (m.size() > kJacobiMaxElements) return singular_values(m);
  const MatLD dense = m.cast<long double>();
  Eigen::JacobiSVD<MatLD> svd(dense);
  return svd.singularValues().cast<double>();
}

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

// sigma_i(G) / (||G||_F + eps), in float64: what the kernel's normalization produces in exact
// arithmetic (the kernel rounds the norm and the quotients; that rounding is part of the slack).
inline Eigen::VectorXd normalized_singular_values(const MatD& g, double eps) {
  const double norm = std::sqrt(g.cwiseAbs2().sum());
  return accurate_singular_values(g) / (norm + eps);
}

}  // namespace nsv::props

namespace nsv::props {

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

// The Gram loop's noise floor. The gram kernel (on non-square inputs) forms R = X X^T of the
// normalized X in the compute dtype; the rounding error of R has spectral norm about
// u_eff x_max^2 (u_eff as in the band above: one rounding plus the sqrt(n)-grown accumulation of
// an inner product of the long side). An eigenvalue x_i^2 of R below that is rounding noise: the
// direction of x_i, and how large the iteration makes it, are then set by rounding, not by G.
// So the loop resolves x_i only when x_i >= sqrt(u_eff) x_max (bf16 at n = 16: 0.14 x_max; fp16:
// 0.049; fp32: 5e-4). Later steps add noise of the same size to a direction the iteration has
// already grown (by a_k per step while small), so the first Gram is the one that decides. An
// unresolved direction is amplified like any small singular value, up to prod a_k (486 for keller
// x 5): where the band of the configuration crosses the repelling fixed point (outside the
// first-order regime), a correct kernel may carry such a direction past it while the reference's
// rounding did not, or the other way round. Measured (bf16 keller x 5 on 40 rank-1
// inputs): the reference diverged on 13, DeepSpeed's Gram kernel on 3, the reference on two
// row/column permutations of the same input (equivalent evaluations) on 25.
inline bool runs_the_gram_loop(const MatD& g, const NsConfig& cfg) {
  return cfg.kernel == Kernel::gram && cfg.steps > 0 && g.rows() != g.cols() && g.size() > 0;
}
// x: normalized_singular_values(g, cfg.eps) of an input that runs_the_gram_loop.
inline bool gram_loop_leaves_a_direction_to_rounding(const Eigen::VectorXd& x, const MatD& g, const NsConfig& cfg) {
  return x.minCoeff() < std::sqrt(effective_unit_roundoff(cfg, std::max(g.rows(), g.cols()))) * x.maxCoeff();
}

// How far the Gram loop lets such a direction drift between restarts. Its tracked eigenvalue in R
// starts as rounding noise, at most u_eff x_max^2 (x_max <= 1), and each step without a restart
// multiplies a small eigenvalue by about a_k^2 (R <- R (a + b R + c R^2)^2), while Q's step
// polynomial is evaluated at that tracked value instead of the direction's true x^2: the two agree
// to first order only while the tracked value is far below 1, (a + b r + c r^2) = a (1 + (b/a) r
// + ...). The band above tracks R alone and cannot see Q leaving it; K5's band, the first-order
// regime and the rounding bounds then say nothing about the output. The growth: the largest, over
// the runs of steps between restarts, of u_eff prod a_k^2. Measured (fp32, 400 rank-deficient and
// ill-conditioned inputs, sides 12..190, keller x 5..12, restarts none, 2, 3 and 2,5): no output
// diverged with a growth below 10 (240 cases), 109 of 160 did above it, the smallest at 13.6; a
// 32 x 109 input at keller x 9 restarting at 2 (a run of 7 steps, growth 23) reached
// sigma_max 1.33 against a band of 1.207 (14.7 at 10 steps). The limit is 1, where the tracked
// noise reaches the scale of a converged eigenvalue. DeepSpeed's keller x 5 restarting at 2 stays
// below it in fp32 (runs of 3 steps: 1.1e-3 at n = 109, 6.4e-3 at n = 4096); in bf16 (u_eff 2^-8)
// the same runs reach 6.4.
inline constexpr double kGramDriftLimit = 1.0;
inline double gram_noise_growth(const NsConfig& cfg, Eigen::Index inner_dim) {
  const double u_eff = effective_unit_roundoff(cfg, inner_dim);
  double growth = 0.0, run = u_eff;
  for (int step = 0; step < cfg.steps; ++step) {
    if (step > 0 && cfg.restarts_before(step)) run = u_eff;
    const double a = cfg.coeffs.at_step(step).a;
    run *= a * a;
    growth = std::max(growth, run);
  }
  return growth;
}
// The Gram loop leaves a direction to rounding and lets it drift past first order (above): judged
// from the input (one accurate SVD, only for configurations whose growth reaches the limit).
inline bool gram_loop_drifts_on_a_direction_left_to_rounding(const MatD& g, const NsConfig& cfg) {
  if (!runs_the_gram_loop(g, cfg) || gram_noise_growth(cfg, std::max(g.rows(), g.cols())) < kGramDriftLimit) return false;
  return gram_loop_leaves_a_direction_to_rounding(normalized_singular_values(g, cfg.eps), g, cfg);
}

}  // namespace nsv::props

namespace nsv::props {

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

}  // namespace nsv::props

namespace nsv::props {

// The repelling fixed point of a step (repelling_fixed_point, nsv/schedule_theory.hpp): keller
// 1.264, you's last triple 1.250, polar_express's last 1.528, cubic5's last 1.829.
//
// An NS output that left the basin of attraction: non-finite, or a singular value above the
// last step's repelling fixed point (once there, every further step only grows it).
inline bool diverged(const MatD& out, const NsConfig& cfg) {
  if (!all_finite(out)) return true;
  if (cfg.steps == 0 || out.size() == 0) return false;
  // The output's spectrum where it is remembered already (K5 compares it with its band); else
  // first the Cholesky test (nsv/lapack_spectra.hpp: no eigensolver, cheaper than the spectrum),
  // which settles every output whose sigma_max is clearly below the fixed point, and the rest from
  // the spectrum. All are accurate to ~1e-13 (dgesdd) or ~n p u (the Gram route) here, far inside
  // any margin that matters.
  const double fixed = repelling_fixed_point(cfg.coeffs.at_step(cfg.steps - 1));
  if (const Eigen::VectorXd* known = already_remembered(out)) return (*known)(0) > fixed;
  return !largest_singular_value_below(out, fixed) && remembered_singular_values(out)(0) > fixed;
}

// How an output diverged, or how far it is from diverging, in words: "non-finite", or its largest
// singular value against the last step's repelling fixed point.
inline std::string divergence_words(const MatD& out, const NsConfig& cfg) {
  if (!all_finite(out)) return "non-finite entries";
  if (cfg.steps == 0 || out.size() == 0) return "no step taken";
  const double top = remembered_singular_values(out)(0);
  const double fixed = repelling_fixed_point(cfg.coeffs.at_step(cfg.steps - 1));
  std::ostringstream s;
  s << std::setprecision(4) << "largest singular value " << top << (top > fixed ? " > " : " <= ")
    << "the repelling fixed point " << fixed;
  return s.str();
}

// Whether rounding provably cannot make NS diverge on g: the rounding-widened band of K5 stays
// below the last step's repelling fixed point (a band that crossed an earlier step's would have
// exploded). Inside this regime the first-order analysis behind the rounding bounds holds;
// outside it (bf16, and the gram loop on rank-deficient inputs in every narrow dtype: its noise
// on a tiny singular value is sqrt(u), not u) the iteration may leave its basin and blow up.
// x: normalized_singular_values(g, cfg.eps).
// spectrum_error: x's error where it does not come from accurate_singular_values (convergence_band).
inline bool first_order_regime(const Eigen::VectorXd& x, const MatD& g, const NsConfig& cfg,
                               std::optional<double> spectrum_error = std::nullopt) {
  if (cfg.steps == 0) return true;
  const Band band = convergence_band(x, cfg, std::max(g.rows(), g.cols()), g.rows() == g.cols(), true, spectrum_error);
  return std::isfinite(band.hi) && band.hi < repelling_fixed_point(cfg.coeffs.at_step(cfg.steps - 1));
}
inline bool first_order_regime(const MatD& g, const NsConfig& cfg) {
  return cfg.steps == 0 || first_order_regime(normalized_singular_values(g, cfg.eps), g, cfg);
}

// The same test from the spectrum the bounds use (remembered_singular_values: the case's bounds
// ask for it anyway, so no accurate SVD is run), its error (bounds_spectrum_error) widening the
// band's initial intervals. That band contains the exact one, so where this says the input lies in
// the regime, it does; where it does not, the input may still (first_order_regime decides).
inline bool first_order_regime_by_the_bounds_spectrum(const MatD& g, const NsConfig& cfg) {
  if (cfg.steps == 0) return true;
  if (g.size() == 0 || !all_finite(g)) return false;
  return first_order_regime(normalized_spectrum(g, cfg), g, cfg, bounds_spectrum_error(g.rows(), g.cols()));
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

}  // namespace nsv::props
