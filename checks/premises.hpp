#pragma once
// The premises of the bounded kernel properties, judged from the input, the configuration and
// the reference's own run on the same input — never from the output under test — so that a
// wrong output cannot exempt itself. A case outside a property's premise is classified (and
// counted in the run's distribution) and asserts nothing; inside it every output under test is
// held to the bound.
//
// Every first-order rounding bound (tolerances.hpp) assumes the iteration stays in its basin of
// attraction under rounding: the first-order regime of oracle.hpp, where the rounding-widened
// band of K5 stays below the last step's repelling fixed point. Outside it (bf16; the Gram loop in
// half precision on rank-deficient or ill-conditioned inputs, whose noise on a tiny singular
// value is sqrt(u), not u) an output may diverge or land anywhere in the basin, and the
// linearized bound says nothing. Divergence itself is a claim: it may only happen outside the
// regime. So:
//   - the reference diverged on this input, and the input lies outside the regime: outside the
//     premise (the reference itself shows the bound does not apply here);
//   - the reference diverged inside the regime: the reference broke its own claim, a failure;
//   - the Gram loop outside the regime on an input with a singular value below the loop's noise
//     floor (oracle.hpp: gram_loop_leaves_a_direction_to_rounding, judged from the input and the
//     configuration): rounding, not G, sets that direction, so whether it crosses the repelling
//     fixed point differs between correct evaluations (the reference on G and on a permutation of
//     G disagree): outside the premise;
//   - the same direction, inside the regime, where the configuration lets the loop run long enough
//     between restarts for it to drift past first order (oracle.hpp: gram_noise_growth, judged
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

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "assertions.hpp"
#include "nsv/kernels.hpp"
#include "nsv/matrix.hpp"
#include "oracle.hpp"

namespace nsv::props {

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

}  // namespace nsv::props
