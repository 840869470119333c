#pragma once
// The premises of the bounded kernel properties, judged from the input, the configuration and
// the reference's own run on the same input — never from the output under test — so that a
// wrong output cannot exempt itself. A case outside a property's premise is classified (and
// counted in the run's distribution) and asserts nothing; inside it every output under test is
// held to the bound.
//
// Every first-order rounding bound (tolerances.hpp) assumes the iteration stays in its basin of
// attraction under rounding: the first-order regime (below), where the rounding-widened
// band of K5 stays below the last step's repelling fixed point. Outside it (bf16; the Gram loop in
// half precision on rank-deficient or ill-conditioned inputs, whose noise on a tiny singular
// value is sqrt(u), not u) an output may diverge or land anywhere in the basin, and the
// linearized bound says nothing. Divergence itself is a claim: it may only happen outside the
// regime. So:
//   - the reference diverged on this input, and the input lies outside the regime: outside the
//     premise (the reference itself shows the bound does not apply here);
//   - the reference diverged inside the regime: the reference broke its own claim, a failure;
//   - the Gram loop outside the regime on an input with a singular value below the loop's noise
//     floor (below: gram_loop_leaves_a_direction_to_rounding, judged from the input and the
//     configuration): rounding, not G, sets that direction, so whether it crosses the repelling
//     fixed point differs between correct evaluations (the reference on G and on a permutation of
//     G disagree): outside the premise;
//   - the same direction, inside the regime, where the configuration lets the loop run long enough
//     between restarts for it to drift past first order (below: gram_noise_growth, judged
//     from the configuration and the input): the band, which tracks R alone, no longer bounds the
//     output: outside the premise;
//   - otherwise the case is inside: an output under test that diverged where the reference did
//     not fails, with both figures in the message. (A 10x-scaled bf16 output has singular values
//     near 10, past every repelling fixed point; judged from that output instead, the case
//     would be skipped and the wrong kernel pass.)
// The reference runs only where its run can decide something: when the input lies in the regime
// (judged from the spectrum the bounds use, with that spectrum's error as slack:
// first_order_regime_by_the_bounds_spectrum), the reference cannot diverge (its claim, which the
// reference's own properties assert by running it) and no Gram-loop exemption applies, so the
// case is inside and only the outputs under test are judged: one that diverged fails. That
// spares the checks of a user's kernel the reference's NS on every input of the fp32 cases,
// almost all of them in the regime (about the callable's own time per case at 1024 x 4096).
#include <rapidcheck.h>

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <sstream>
#include <iomanip>
#include <string>
#include <vector>

#include "assertions.hpp"
#include "nsv/kernels.hpp"
#include "nsv/matrix.hpp"
#include "convergence_band.hpp"
#include "spectra.hpp"

namespace nsv::checks {

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

// One output under test and the reference's output on the same input.
struct JudgedOutput {
  const MatD& under_test;
  const MatD& reference;
};

// The premise judged with the reference's outputs (true: outside, classified).
inline bool outside_the_premise_by_the_reference(const MatD& g, const NsConfig& cfg, const std::vector<JudgedOutput>& outputs) {
  bool reference_diverged = false;
  for (const JudgedOutput& o : outputs) reference_diverged = reference_diverged || diverged(o.reference, cfg);
  if (reference_diverged) {
    if (first_order_regime(g, cfg))
      checks::fail_predicate("the reference's output diverged although the rounding-widened band of the configuration "
                             "stays inside the basin of attraction");
    RC_CLASSIFY(true, "the reference diverged (outside the first-order regime: bound not applicable)");
    return true;
  }
  if (runs_the_gram_loop(g, cfg)) {
    const Eigen::VectorXd x = normalized_singular_values(g, cfg.eps);  // one accurate SVD for both tests
    if (gram_loop_leaves_a_direction_to_rounding(x, g, cfg) && !first_order_regime(x, g, cfg)) {
      RC_CLASSIFY(true, "the Gram loop outside the first-order regime, on a singular value below its noise floor "
                        "(rounding sets that direction: bound not applicable)");
      return true;
    }
  }
  for (const JudgedOutput& o : outputs)
    if (diverged(o.under_test, cfg))
      checks::fail_predicate("the output diverged (" + divergence_words(o.under_test, cfg) +
                             ") where the reference's did not (" + divergence_words(o.reference, cfg) +
                             "): a correct implementation stays in the basin of attraction wherever the reference does");
  return false;
}

// True when the case lies outside the premise (classified; the caller asserts nothing). Fails
// the case when an output under test diverged inside it, or the reference diverged inside the
// regime. outputs: the outputs under test, each a computation of cfg on an input with g's
// singular values; reference(): the reference's outputs on the same inputs, in the same order (a
// Batch), asked for only outside the regime.
template <class ReferenceRuns>
bool outside_the_premise(const MatD& g, const NsConfig& cfg, std::initializer_list<std::reference_wrapper<const MatD>> outputs,
                         const ReferenceRuns& reference) {
  if (gram_loop_drifts_on_a_direction_left_to_rounding(g, cfg)) {
    RC_CLASSIFY(true, "the Gram loop drifts on a singular value below its noise floor, between restarts (rounding sets "
                      "that direction and Q leaves R: bound not applicable)");
    return true;
  }
  if (first_order_regime_by_the_bounds_spectrum(g, cfg)) {
    for (const MatD& o : outputs)
      if (diverged(o, cfg))
        checks::fail_predicate("the output diverged (" + divergence_words(o, cfg) +
                               ") on an input inside the first-order regime: the rounding-widened band of the "
                               "configuration stays inside the basin of attraction, so no correct computation diverges");
    return false;
  }
  const Batch references = reference();
  std::vector<JudgedOutput> judged;
  std::size_t i = 0;
  for (const MatD& o : outputs) judged.push_back({o, references.at(i++)});
  return outside_the_premise_by_the_reference(g, cfg, judged);
}

// True (and the case classified) when g is outside the first-order regime of any of the configs:
// a first-order bound does not apply to the case. Judged from the input and the configurations.
inline bool outside_first_order_regime(const MatD& g, std::initializer_list<const NsConfig*> configs) {
  for (const NsConfig* cfg : configs)
    if (!first_order_regime(g, *cfg)) {
      RC_CLASSIFY(true, "outside the first-order regime (judged from the input): bound not applicable");
      return true;
    }
  return false;
}

}  // namespace nsv::checks
