#pragma once
// The singular values the bounds, the band and the premises read: the fast spectrum of the bounds
// (remembered per thread for the last few matrices), the accurate one of the band, and the input's
// normalized singular values. Their errors: svd_error.hpp.
#include <Eigen/Core>
#include <Eigen/SVD>
#include <cmath>
#include <cstring>
#include <vector>

#include "nsv/lapack_spectra.hpp"
#include "nsv/metrics.hpp"
#include "reference_runs.hpp"
#include "svd_error.hpp"

namespace nsv::checks {

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
inline Eigen::VectorXd accurate_singular_values(const MatD& m) {
  using MatLD = Eigen::Matrix<long double, Eigen::Dynamic, Eigen::Dynamic>;
  if (m.size() == 0) return {};
  if (m.size() > kJacobiMaxElements) return singular_values(m);
  const MatLD dense = m.cast<long double>();
  Eigen::JacobiSVD<MatLD> svd(dense);
  return svd.singularValues().cast<double>();
}

// sigma_i(G) / (||G||_F + eps), in float64: what the kernel's normalization produces in exact
// arithmetic (the kernel rounds the norm and the quotients; that rounding is part of the slack).
inline Eigen::VectorXd normalized_singular_values(const MatD& g, double eps) {
  const double norm = std::sqrt(g.cwiseAbs2().sum());
  return accurate_singular_values(g) / (norm + eps);
}

}  // namespace nsv::checks
