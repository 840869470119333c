// Kernel properties whose claim is bounded: true in exact arithmetic, within a derived rounding
// tolerance in floating point (tolerances.hpp says how each bound is derived).
// K2 scaling, K3 orthogonal equivariance, K4 permutation equivariance, K5 convergence band,
// K6 gram = standard, K8 row vectors in closed form.
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "check.hpp"
#include "generators/configs.hpp"
#include "generators/matrices.hpp"
#include "generators/shapes.hpp"
#include "generators/transforms.hpp"
#include "oracle.hpp"
#include "premises.hpp"
#include "running_error.hpp"
#include "tolerances.hpp"

namespace nsv::props {
namespace {

rc::Gen<NsConfig> any_config() { return ns_configs(); }

MatD permuted(const MatD& g, const std::vector<Eigen::Index>& rows, const std::vector<Eigen::Index>& cols) {
  MatD out(g.rows(), g.cols());
  for (Eigen::Index i = 0; i < g.rows(); ++i)
    for (Eigen::Index j = 0; j < g.cols(); ++j)
      out(i, j) = g(rows[static_cast<std::size_t>(i)], cols[static_cast<std::size_t>(j)]);
  return out;
}

// || phi(c1 xhat) - phi(c2 xhat) || / || phi(c2 xhat) ||: how much the exact map's output
// changes when the normalized singular values xhat (of G / ||G||) are scaled by c1 instead of
// c2. Scaling G by s changes c = ||G|| / (||G|| + eps) and nothing else.
double eps_effect(const Eigen::VectorXd& xhat, double c1, double c2, const NsConfig& cfg) {
  double num = 0, den = 0;
  for (Eigen::Index i = 0; i < xhat.size(); ++i) {
    const double a = scalar_map(cfg, c1 * xhat(i)), b = scalar_map(cfg, c2 * xhat(i));
    num += (a - b) * (a - b);
    den += b * b;
  }
  return den == 0 ? 0.0 : std::sqrt(num / den);
}

// Every bounded claim below has the form "within the first-order rounding bound, unless an
// output diverged where divergence is allowed" (premises.hpp).

}  // namespace

BOOST_AUTO_TEST_SUITE(bounded_kernel_properties)

// K2 [bounded]. Positive scaling: the normalization divides s out, except for the eps in
// ||sG|| + eps, whose effect on the exact map is predicted from the singular values; the rest is
// the rounding of two computations (B(G) + B(sG)). Power-of-two scales are exact under a
// premise (kernel_exact.cpp).
NSV_PROPERTY(positive_scaling_changes_the_result_only_by_eps_and_rounding, ()) {
  const TestMatrix g = *matrices();
  const NsConfig cfg = *any_config();
  const double s = std::exp2(*rc::gen::inRange(-4000, 4001) / 1000.0);  // 1/16 .. 16
  const MatD scaled = g.values * s;
  const double norm = std::sqrt(g.values.cwiseAbs2().sum());
  RC_PRE(norm > 0.0);
  const Eigen::VectorXd xhat = singular_values(g.values) / norm;
  const double c_scaled = s * norm / (s * norm + cfg.eps), c_plain = norm / (norm + cfg.eps);
  const double predicted = eps_effect(xhat, c_scaled, c_plain, cfg);
  const Tolerance& tol = tolerance(Claim::scaling, cfg.kernel, cfg.dtype);
  RC_LOG() << "s = " << exact(s) << ", predicted eps effect " << predicted << '\n';
  const MatD of_scaled = ns(scaled, cfg), of_plain = ns(g.values, cfg);
  if (diverged_where_allowed(g.values, cfg, {&of_scaled, &of_plain})) return;
  // measured <= predicted + bound, written so that the recorded ratio is the rounding part's
  RC_ASSERT_WITHIN(rel_diff(of_scaled, of_plain) - predicted,
                   tol.bound(rounding_bound(g.values, cfg) + rounding_bound(scaled, cfg)), tol.derivation);
}

// K3 [bounded]. NS(U G V^T) = U NS(G) V^T in exact arithmetic for orthogonal U, V (Haar, from
// QR of generated gaussians, applied in float64).
NSV_PROPERTY(orthogonal_transformations_commute_with_ns_within_rounding, ()) {
  const TestMatrix g = *matrices();
  const NsConfig cfg = *any_config();
  const MatD u = *orthogonal_matrices(g.values.rows());
  const MatD v = *orthogonal_matrices(g.values.cols());
  const MatD rotated = u * g.values * v.transpose();
  const MatD plain = ns(g.values, cfg), of_rotated = ns(rotated, cfg);
  if (diverged_where_allowed(g.values, cfg, {&plain, &of_rotated})) return;
  const MatD expected = u * plain * v.transpose();
  const Tolerance& tol = tolerance(Claim::orthogonal_equivariance, cfg.kernel, cfg.dtype);
  RC_ASSERT_WITHIN(rel_diff(of_rotated, expected),
                   tol.bound(rounding_bound(g.values, cfg) + rounding_bound(rotated, cfg)), tol.derivation);
}

// K4 [bounded]. Row and column permutations commute with NS in exact arithmetic. Whether they do
// bit for bit depends on the GEMM's summation order and is measured, not claimed
// (kernel_quantified.cpp reports the exact fractions).
NSV_PROPERTY(permutations_commute_with_ns_within_rounding, ()) {
  const TestMatrix g = *matrices();
  const NsConfig cfg = *any_config();
  const auto rows = *permutations(g.values.rows());
  const auto cols = *permutations(g.values.cols());
  const MatD input = permuted(g.values, rows, cols);
  const MatD plain = ns(g.values, cfg), actual = ns(input, cfg);
  if (diverged_where_allowed(g.values, cfg, {&plain, &actual})) return;
  const MatD expected = permuted(plain, rows, cols);
  RC_CLASSIFY(compare_bits(actual, expected, cfg.dtype).identical, "bit-identical");
  const Tolerance& tol = tolerance(Claim::permutation_equivariance, cfg.kernel, cfg.dtype);
  RC_ASSERT_WITHIN(rel_diff(actual, expected), tol.bound(rounding_bound(g.values, cfg) + rounding_bound(input, cfg)),
                   tol.derivation);
}

// K5 [bounded, derived interval]. The singular values of NS(G) lie in the band the scalar map
// phi takes the input's normalized singular values to, widened step by step by the rounding of
// that step (convergence_band in oracle.hpp: Weyl's inequality per step, exact interval images
// of each quintic). For keller x 5 and x >= 0.01 the rounding-free band is SPEC's
// [0.682, 1.134]. Where the rounding slack is wider than the band itself (bf16, whose u = 2^-8
// is amplified up to 486 times by the iteration; fp16 with compute accumulation) the check is
// weak and the case is tagged; kernel_quantified.cpp measures how far bf16 leaves the exact band.
NSV_PROPERTY(singular_values_stay_in_the_band_of_the_scalar_map, ()) {
  const TestMatrix g = *matrices();
  const NsConfig cfg = *any_config();
  const Eigen::VectorXd x = normalized_singular_values(g.values, cfg.eps);
  const Band band = convergence_band(x, cfg, g.shape.long_side(), g.shape.square());
  const MatD out = ns(g.values, cfg);
  if (diverged_where_allowed(g.values, cfg, {&out})) return;
  const Eigen::VectorXd sigma = accurate_singular_values(out);
  RC_CLASSIFY(band.hi < 2.0, "band informative (hi < 2)");
  RC_LOG() << "band [" << exact(band.lo) << ", " << exact(band.hi) << "]\n";
  for (Eigen::Index i = 0; i < sigma.size(); ++i) {
    if (!(sigma(i) >= band.lo && sigma(i) <= band.hi))
      RC_FAIL("singular value " + std::to_string(i) + " = " + exact(sigma(i)) + " outside the band [" + exact(band.lo) + ", " +
              exact(band.hi) + "] derived from the input's normalized singular values");
  }
}

// K6 [bounded]. The gram kernel computes the standard kernel's polynomial by another loop: in
// float64 the two agree to 1e-12 relative (SPEC), on wide, tall and square matrices of every
// spectrum, for DeepSpeed's configuration (keller, 5 steps).
NSV_PROPERTY(gram_matches_standard_to_1e12_in_fp64, ()) {
  const TestMatrix g = *matrices();
  NsConfig cfg;
  cfg.dtype = DType::fp64;
  const Tolerance& tol = tolerance(Claim::gram_matches_standard, Kernel::gram, DType::fp64);
  RC_ASSERT_WITHIN(rel_diff(ns(g.values, with_kernel(cfg, Kernel::gram)), ns(g.values, with_kernel(cfg, Kernel::standard))),
                   tol.bound(0.0), tol.derivation);
}

// K6 [bounded] in the narrow dtypes, any schedule and step count: within the two loops' own
// rounding bounds.
NSV_PROPERTY(gram_matches_standard_within_rounding_in_narrow_dtypes, ()) {
  const TestMatrix g = *matrices();
  NsConfig cfg = *any_config();
  cfg.dtype = *narrow_dtypes();
  cfg.accumulate = *accumulations(cfg.dtype);
  const NsConfig gram = with_kernel(cfg, Kernel::gram), standard = with_kernel(cfg, Kernel::standard);
  const MatD of_gram = ns(g.values, gram), of_standard = ns(g.values, standard);
  if (diverged_where_allowed(g.values, gram, {&of_gram}) | diverged_where_allowed(g.values, standard, {&of_standard})) return;
  // Premise of the first-order bounds: the Gram loop in fp16/bf16 leaves it on ill-conditioned
  // and rank-deficient inputs (found on fresh wide-tier seeds), where the outputs stay finite but
  // their distance is no longer first order in u.
  if (outside_first_order_regime(g.values, {&gram, &standard})) return;
  const Tolerance& tol = tolerance(Claim::gram_matches_standard, Kernel::gram, cfg.dtype);
  RC_ASSERT_WITHIN(rel_diff(of_gram, of_standard),
                   tol.bound(rounding_bound(g.values, gram) + rounding_bound(g.values, standard)), tol.derivation);
}

// [bounded] The two ways of computing the n x n products (mirrored upper triangle, or both
// triangles as PyTorch does) compute the same map within their own rounding, every dtype.
NSV_PROPERTY(symmetric_products_match_full_products_within_rounding, ()) {
  const TestMatrix g = *matrices();
  NsConfig cfg = *any_config();
  NsConfig symmetric = cfg, full = cfg;
  symmetric.products = Products::symmetric;
  full.products = Products::full;
  const MatD of_symmetric = ns(g.values, symmetric), of_full = ns(g.values, full);
  if (diverged_where_allowed(g.values, symmetric, {&of_symmetric}) | diverged_where_allowed(g.values, full, {&of_full})) return;
  const Tolerance& tol = tolerance(Claim::products_agree, cfg.kernel, cfg.dtype);
  RC_ASSERT_WITHIN(rel_diff(of_symmetric, of_full), tol.bound(2 * rounding_bound(g.values, cfg)), tol.derivation);
}

// K8 [bounded]. A 1 x n matrix has a single singular value x = ||g|| / (||g|| + eps), so
// NS(g) = phi(x) g / ||g|| exactly (n x 1 follows by K1's exact transpose).
// Premise, as for K2-K4: the output stays in the basin of attraction wherever the rounding-widened
// band says it must (diverged_where_allowed fails the property otherwise). It is needed since the
// `cans` schedule: its first step maps x = 1 to 1.9915, 0.0023 below its second step's repelling
// fixed point 1.9938, so one bf16 rounding of x above 1 (x = 1 + 2^-8) grows to 1e57 in five
// steps (found by this property: a 1 x 2 bf16 input gave an infinite output).
NSV_PROPERTY(row_vector_maps_to_its_direction_times_the_scalar_map, ()) {
  const TestMatrix g = *matrices(shapes_of(ShapeKind::row_vector));
  const NsConfig cfg = *any_config();
  const double norm = std::sqrt(g.values.cwiseAbs2().sum());
  RC_PRE(norm > 0.0);
  const MatD expected = g.values * (scalar_map(cfg, norm / (norm + cfg.eps)) / norm);
  const MatD out = ns(g.values, cfg);
  if (diverged_where_allowed(g.values, cfg, {&out})) return;
  const Tolerance& tol = tolerance(Claim::vector_closed_form, cfg.kernel, cfg.dtype);
  const double bound = RowVectorErrorBound(cfg, g.values.size()).relative(norm);
  RC_ASSERT_WITHIN(rel_diff(out, expected), tol.bound(bound), tol.derivation);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace nsv::props
