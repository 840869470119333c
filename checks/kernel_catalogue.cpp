#include "kernel_catalogue.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <vector>

#include "assertions.hpp"
#include "generators/configs.hpp"
#include "generators/floats.hpp"
#include "generators/matrices.hpp"
#include "generators/transforms.hpp"
#include "nsv/invalid_field.hpp"
#include "nsv/metrics.hpp"
#include "nsv/schedule_theory.hpp"
#include "reference_runs.hpp"
#include "spectra.hpp"
#include "svd_error.hpp"
#include "convergence_band.hpp"
#include "premises.hpp"
#include "running_error.hpp"
#include "scaling_premise.hpp"
#include "tolerances.hpp"

namespace nsv::checks {
namespace {

using checks::JudgedOutput;
using checks::Shape;
using checks::ShapeKind;
using checks::TestMatrix;

// ---------------------------------------------------------------------------------------------
// Drawing a case from the domain, and saying what was drawn (kept with a failure).

rc::Gen<Shape> any_shape(const KernelDomain& d) { return d.shape ? rc::gen::just(*d.shape) : checks::shapes(d.max_dim); }
rc::Gen<Shape> non_square_shape(const KernelDomain& d) {
  return d.shape ? rc::gen::just(*d.shape) : checks::non_square_shapes(d.max_dim);
}
rc::Gen<Shape> row_vector_shape(const KernelDomain& d) {
  return d.shape ? rc::gen::just(*d.shape) : checks::shapes_of(ShapeKind::row_vector, d.max_dim);
}
rc::Gen<Shape> square_shape(const KernelDomain& d) {
  return d.shape ? rc::gen::just(*d.shape) : checks::shapes_of(ShapeKind::square, d.max_dim);
}

std::string described(const TestMatrix& g) {
  std::ostringstream s;
  checks::showValue(g.shape, s);
  s << ", ";
  showValue(g.spectrum, s);
  if (g.seed) s << ", seed 0x" << std::hex << *g.seed;
  return s.str();
}

TestMatrix draw(const rc::Gen<Shape>& shape) {
  TestMatrix g = *checks::matrices(shape);
  note_input(described(g));
  note_matrix("input", g.values);
  return g;
}

NsConfig draw_config(const KernelDomain& d) { return *d.configs; }

// The reference's output on x, for a premise (premises.hpp, which asks only where it needs it):
// the output under test itself when the implementation is the reference (the premise is then
// judged from the same run), else the CPU reference's.
Batch reference_output(const KernelUnderTest& impl, const MatD& x, const NsConfig& cfg, const MatD& output) {
  return {impl.is_reference() ? output : checks::ns(x, cfg)};
}

// The same for two inputs of one configuration, the reference's runs side by side (ns_batch).
Batch reference_outputs(const KernelUnderTest& impl, const MatD& x1, const MatD& out1, const MatD& x2, const MatD& out2,
                        const NsConfig& cfg) {
  return impl.is_reference() ? Batch{out1, out2} : checks::ns_batch({x1, x2}, cfg);
}

bool is_zero(const MatD& m) { return (m.array() == 0.0).all(); }

// The dtype whose ULPs describe a change of the caller's buffer (float32 arrays, float64 for fp64).
DType buffer_dtype(const NsConfig& cfg) { return cfg.dtype == DType::fp64 ? DType::fp64 : DType::fp32; }

// Sets an implementation's thread count back to its own default however the property exits.
struct RestoreThreads {
  const KernelUnderTest& impl;
  ~RestoreThreads() { impl.set_threads(0); }
};

// ---------------------------------------------------------------------------------------------
// Exact claims.

// K1 [exact]. A tall input is transposed to wide before anything else, and a wide one is not:
// NS(G^T) and NS(G) run the same operations on the same wide matrix, so the results are each
// other's transposes bit for bit. Square matrices are not transposed, so there the claim does
// not hold (negative control: square_transposition_is_not_exact in kernel_quantified.cpp). Nor
// does it with accumulate=compute, PyTorch's CPU arithmetic: X @ X.mT sums in fp32 on a wide input
// and in the compute dtype on a tall one, whose X = G.mT is a transposed view (cpu_backend.cpp:
// CpuOps::gram), so the two runs do not run the same operations; judged from the configuration.
void transpose(const KernelUnderTest& impl, const KernelDomain& d) {
  const TestMatrix g = draw(non_square_shape(d));
  const NsConfig cfg = draw_config(d);
  if (cfg.accumulate == Accumulate::compute) {
    RC_CLASSIFY(true, "accumulate=compute: a tall input's Gram sums in the compute dtype, a wide one's in fp32");
    return;
  }
  assert_bit_identical("NS(G^T) and NS(G)^T", impl.run(g.values.transpose(), cfg), impl.run(g.values, cfg).transpose(),
                       cfg.dtype);
}

// The matrices of a batch: of assorted shapes where the implementation takes a list of them,
// else 3-D batches of one shape.
std::vector<TestMatrix> draw_batch(const KernelUnderTest& impl, const KernelDomain& d, int min_count) {
  const bool mixed = (impl.abilities() & kMixedBatches) && !d.shape;
  const auto ms = mixed ? *checks::matrix_batches(min_count, 6, any_shape(d))
                        : *rc::gen::mapcat(rc::gen::pair(any_shape(d), rc::gen::inRange(min_count, 7)), [](const auto& p) {
                            return rc::gen::container<std::vector<TestMatrix>>(static_cast<std::size_t>(p.second),
                                                                               checks::matrices(rc::gen::just(p.first)));
                          });
  std::string shapes;
  for (const TestMatrix& m : ms) shapes += (shapes.empty() ? "" : ", ") + std::to_string(m.shape.rows) + "x" + std::to_string(m.shape.cols);
  note_input("a batch of " + std::to_string(ms.size()) + " matrices: " + shapes);
  return ms;
}

Batch batch_result(const KernelUnderTest& impl, const Batch& batch, const NsConfig& cfg) {
  Batch out = impl.run_batch(batch, cfg);
  assert_that(out.size() == batch.size(), "the batched call returned " + std::to_string(out.size()) + " matrices for " +
                                              std::to_string(batch.size()));
  return out;
}

// K7 [exact]. NS of a batch equals NS of each matrix alone: every matrix has its own storage and
// each product runs on it alone.
void batched_equals_loop(const KernelUnderTest& impl, const KernelDomain& d) {
  const auto ms = draw_batch(impl, d, 1);
  const NsConfig cfg = draw_config(d);
  const Batch out = batch_result(impl, checks::values_of(ms), cfg);
  for (std::size_t i = 0; i < ms.size(); ++i)
    assert_bit_identical("matrix " + std::to_string(i) + " of the batched call and NS of it alone", out[i],
                         impl.run(ms[i].values, cfg), cfg.dtype);
}

// K7 [bounded]: a batched call computes each matrix's own NS, within rounding. Matrix i of the
// batch and the same matrix alone are two computations of one map, each within B(G_i) of it
// (tolerances.hpp: batch_matches_loop); the bits are the exact claim above (promise bitwise), this
// one is what a correct batched kernel promises whatever order its batched GEMMs sum in. A batch
// normalized by the whole batch's norm, or whose matrices mix, fails it. Premise as K3, per matrix.
void batched_matches_loop_within_rounding(const KernelUnderTest& impl, const KernelDomain& d) {
  const auto ms = draw_batch(impl, d, 1);
  const NsConfig cfg = draw_config(d);
  const Batch out = batch_result(impl, checks::values_of(ms), cfg);
  const checks::Tolerance& tol = checks::tolerance(checks::Claim::batch_matches_loop, cfg.kernel, cfg.dtype);
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const MatD& g = ms[i].values;
    const MatD alone = impl.run(g, cfg);
    const auto references = [&] {  // one input: one run judges both outputs
      Batch runs = reference_output(impl, g, cfg, out[i]);
      runs.push_back(impl.is_reference() ? alone : runs[0]);
      return runs;
    };
    if (checks::outside_the_premise(g, cfg, {out[i], alone}, references)) continue;
    assert_within("||matrix " + std::to_string(i) + " of the batched call - NS of it alone|| / ||NS(G)||",
                  checks::distance_relative_to_the_map(out[i], alone, g, cfg),
                  tol.bound(2 * checks::rounding_bound(g, cfg)), tol.derivation);
  }
}

// K10 [exact]: the thread count. The reference runs independent matrices on different OpenMP
// threads, never one product on several (OpenBLAS is pinned to one thread), so 1, 2 and 3
// threads agree.
void thread_count(const KernelUnderTest& impl, const KernelDomain& d) {
  const Batch batch = checks::values_of(draw_batch(impl, d, 2));
  const NsConfig cfg = draw_config(d);
  const RestoreThreads restore{impl};
  impl.set_threads(1);
  const Batch one = batch_result(impl, batch, cfg);
  for (int threads : {2, 3}) {
    impl.set_threads(threads);
    const Batch other = batch_result(impl, batch, cfg);
    for (std::size_t i = 0; i < batch.size(); ++i)
      assert_bit_identical("matrix " + std::to_string(i) + " with " + std::to_string(threads) + " threads and with 1", other[i],
                           one[i], cfg.dtype);
  }
}

// K10 [exact]: the same input gives the same bits twice.
void repeated_calls(const KernelUnderTest& impl, const KernelDomain& d) {
  const TestMatrix g = draw(any_shape(d));
  const NsConfig cfg = draw_config(d);
  const MatD first = impl.run(g.values, cfg);
  assert_bit_identical("a second call and the first on the same input", impl.run(g.values, cfg), first, cfg.dtype);
}

// K10 [exact]: batch position, neighbours and heap layout. A matrix's bits do not depend on where
// it sits in a batch, on its neighbours, or on where the allocator put the batch's storage (a
// spacer of 1..64 floats allocated first moves it; the input's address modulo 64 is tagged to
// show that the layouts varied). Neighbours of other shapes where the implementation takes them.
void batch_position(const KernelUnderTest& impl, const KernelDomain& d) {
  const TestMatrix target = draw(any_shape(d));
  const bool mixed = (impl.abilities() & kMixedBatches) && !d.shape;
  const auto neighbours = *rc::gen::container<std::vector<TestMatrix>>(
      static_cast<std::size_t>(*rc::gen::inRange(1, 5)), checks::matrices(mixed ? checks::shapes(16) : rc::gen::just(target.shape)));
  const auto position = *rc::gen::inRange<std::size_t>(0, neighbours.size() + 1);
  const auto spacer_floats = *rc::gen::inRange<std::size_t>(1, 65);
  const NsConfig cfg = draw_config(d);
  const std::vector<float> spacer(spacer_floats, 1.0f);  // shifts where the next allocations land
  Batch batch = checks::values_of(neighbours);
  batch.insert(batch.begin() + static_cast<std::ptrdiff_t>(position), target.values);
  RC_TAG(reinterpret_cast<std::uintptr_t>(batch[position].data()) % 64);
  assert_bit_identical("the matrix at batch position " + std::to_string(position) + " of " + std::to_string(batch.size()) +
                           " and the same matrix as a batch of one",
                       batch_result(impl, batch, cfg)[position], batch_result(impl, {target.values}, cfg)[0], cfg.dtype);
}

// K10 [exact]: a matrix's bits do not depend on where its buffer starts.
void memory_offset(const KernelUnderTest& impl, const KernelDomain& d) {
  const TestMatrix g = draw(any_shape(d));
  const NsConfig cfg = draw_config(d);
  const int offset = *rc::gen::inRange(1, 17);
  assert_bit_identical("NS of G stored " + std::to_string(offset) + " elements into a buffer and NS of G on its own",
                       impl.run_at_offset(g.values, offset, cfg), impl.run(g.values, cfg), cfg.dtype);
}

// K2 [exact, under a stated premise]. Scaling by s = 2^k scales every rounded input value, the
// float64 sum of squares (by 4^k), its square root and the rounded norm exactly, as long as no
// value leaves the normalization dtype's normal range; and if eps = 1e-7 is below half an ULP
// of both rounded norms, ||G|| + eps rounds to ||G|| for both. Then both computations divide
// the same mantissas and the results are bit-identical. In fp64 the premise needs ||G|| > 1.8e9
// (eps is never absorbed at ordinary magnitudes); G is lifted to meet it.
void power_of_two_scaling(const KernelUnderTest& impl, const KernelDomain& d) {
  const TestMatrix g = draw(any_shape(d));
  const NsConfig cfg = draw_config(d);
  const int k = *rc::gen::inRange(-6, 7);
  const double norm = std::sqrt(g.values.cwiseAbs2().sum());
  RC_PRE(norm > 0.0);
  // Lift G so that both norms are at least 4 eps / u_nd (eps then at most a quarter ULP).
  const double threshold = 4 * cfg.eps / unit_roundoff(normalization_dtype(cfg));
  const int lift = std::max(0, static_cast<int>(std::ceil(std::log2(threshold / (norm * std::min(1.0, std::ldexp(1.0, k)))))));
  const MatD base = g.values * std::ldexp(1.0, lift);
  RC_PRE(checks::power_of_two_scaling_is_exact(base, k, cfg));
  RC_CLASSIFY(cfg.dtype == DType::fp64, "fp64 (lifted past 1.8e9)");
  assert_bit_identical("NS(2^" + std::to_string(k) + " G) and NS(G), G lifted by 2^" + std::to_string(lift),
                       impl.run(base * std::ldexp(1.0, k), cfg), impl.run(base, cfg), cfg.dtype);
}

// Gram runs the standard loop on square matrices; in fp32 and fp64 it also normalizes in the
// same dtype as standard, so the two kernels are one computation there [exact].
void gram_is_standard_on_square(const KernelUnderTest& impl, const KernelDomain& d) {
  const TestMatrix g = draw(square_shape(d));
  NsConfig cfg = draw_config(d);
  cfg.dtype = *rc::gen::element(DType::fp32, DType::fp64);
  if (cfg.dtype == DType::fp64) cfg.accumulate = Accumulate::fp32;
  assert_bit_identical("NS_gram(G) and NS_standard(G)", impl.run(g.values, checks::with_kernel(cfg, Kernel::gram)),
                       impl.run(g.values, checks::with_kernel(cfg, Kernel::standard)), cfg.dtype);
}

// K8 [exact]: the zero matrix. 0 / (0 + eps) = 0 and every product of zeros is zero.
void zero_matrix(const KernelUnderTest& impl, const KernelDomain& d) {
  const Shape shape = *any_shape(d);
  const NsConfig cfg = draw_config(d);
  note_input("the zero matrix " + std::to_string(shape.rows) + "x" + std::to_string(shape.cols));
  const MatD zero = MatD::Zero(shape.rows, shape.cols);
  const MatD out = impl.run(zero, cfg);
  ++case_log().checked;
  if (out.rows() != zero.rows() || out.cols() != zero.cols() || !is_zero(out)) fail_bits("NS(0) and 0", out, zero, cfg.dtype);
}

// K8 [exact]: any NaN or infinity in G makes the output non-finite (never a silent finite
// answer). A non-finite entry makes the norm NaN or Inf; its own quotient is NaN, and after one
// step the GEMMs spread it to every entry; with 0 steps the NaN entry itself remains.
void non_finite_input(const KernelUnderTest& impl, const KernelDomain& d) {
  const TestMatrix g = draw(any_shape(d));
  const NsConfig cfg = draw_config(d);
  checks::FloatKnobs<double> knobs;
  knobs.allow_nan = true;
  knobs.allow_inf = true;
  const double bad = *rc::gen::suchThat(checks::floats<double>(knobs), [](double v) { return !std::isfinite(v); });
  const auto index = *rc::gen::inRange<Eigen::Index>(0, g.values.size());
  MatD poisoned = g.values;
  poisoned.data()[index] = bad;
  assert_that(!all_finite(impl.run(poisoned, cfg)),
              "an input holding " + exact(bad) + " at flat index " + std::to_string(index) +
                  " gave an all-finite output: a non-finite gradient must give a non-finite update (flagged), never a "
                  "silent finite answer");
}

// K8 [exact, by case]: extreme magnitudes, G scaled by 2^k as a float32 gradient, k drawn from
// four ranges: tiny (-130..-100), moderate (-30..30), past fp16's range (10..20) and at
// float32's top (121..129). Exactly one of (scaling_premise.hpp, judged from the input and the
// configuration): flagged non-finite; the documented zero of an overflowing norm (DeepSpeed
// computes X / (||X|| + eps) the same way); the bits of the unscaled input (K2's premise); zero
// when every rounded entry is; otherwise finite, unless the reference itself leaves its basin on
// this input outside the first-order regime (fp16/bf16 Gram on an ill-conditioned input).
// Promise bitwise: the cases are the reference's own range behaviour (its norm summed in float64,
// its bits under exact scaling), not the map's: a correct kernel whose norm sums in the compute
// dtype (numpy's float32 norm, PyTorch's bf16 norm) overflows to the documented zero at 2^121,
// where the map and the reference give NS(G).
void extreme_magnitudes(const KernelUnderTest& impl, const KernelDomain& d) {
  const TestMatrix g = draw(any_shape(d));
  const NsConfig cfg = draw_config(d);
  // (resized: the ranges are wanted whole from the first case on, not grown with the size)
  const int k = *rc::gen::resize(100, rc::gen::weightedOneOf<int>({{1, rc::gen::inRange(-130, -99)},
                                                                   {1, rc::gen::inRange(-30, 31)},
                                                                   {1, rc::gen::inRange(10, 21)},
                                                                   {1, rc::gen::inRange(121, 130)}}));
  const MatD scaled = (g.values * std::ldexp(1.0, k)).cast<float>().cast<double>();
  const MatD out = impl.run(scaled, cfg);
  const std::string what = "G scaled by 2^" + std::to_string(k);
  const checks::ExtremeCase kind = checks::extreme_case(g.values, scaled, k, cfg);
  const std::string label = checks::extreme_case_label(kind);
  RC_CLASSIFY(true, label);
  switch (kind) {
    case checks::ExtremeCase::input_overflows:
    case checks::ExtremeCase::entry_overflows:
      assert_that(!all_finite(out), what + ": " + label + ", but the output is finite");
      break;
    case checks::ExtremeCase::norm_overflows:
    case checks::ExtremeCase::underflows_to_zero:
      ++case_log().checked;
      if (!is_zero(out)) fail_bits(what + " (" + label + "): NS and 0", out, MatD::Zero(out.rows(), out.cols()), cfg.dtype);
      break;
    case checks::ExtremeCase::exact: assert_bit_identical("NS(" + what + ") and NS(G)", out, impl.run(g.values, cfg), cfg.dtype); break;
    case checks::ExtremeCase::finite:
      if (checks::outside_the_premise(scaled, cfg, {out}, [&] { return reference_output(impl, scaled, cfg, out); })) break;
      assert_that(all_finite(out), what + " is finite in every dtype involved, but the output is not");
      break;
  }
}

// K11 [exact]: the kernel leaves the caller's input as it was (an in-place normalization, as a
// published Gram NS does, changes the optimizer's gradient behind its back), and what it returns
// is a new array, not a view of the input.
void input_untouched(const KernelUnderTest& impl, const KernelDomain& d) {
  const TestMatrix g = draw(any_shape(d));
  const NsConfig cfg = draw_config(d);
  const ObservedCall call = impl.run_observed(g.values, cfg);
  assert_bit_identical("the input after the call and before it", call.input_after, g.values, buffer_dtype(cfg));
  assert_that(!call.output_aliases_input, "the output shares memory with the input: the caller's gradient and the update "
                                          "are one buffer");
}

// ---------------------------------------------------------------------------------------------
// Bounded claims: the tolerance rows of tolerances.hpp. They bound the rounding of a computation
// of the configured kernel, dtype and schedule (B(G)); a faithful implementation performs the
// same rounded stages, so the same a-priori bound applies to it. Each is asserted inside the
// premise of premises.hpp, judged from the input and (outside the first-order regime) the
// reference's run.

// || phi(c1 xhat) - phi(c2 xhat) || / || phi(c2 xhat) ||: how much the exact map's output
// changes when the normalized singular values xhat (of G / ||G||) are scaled by c1 instead of
// c2. Scaling G by s changes c = ||G|| / (||G|| + eps) and nothing else. The two squared norms,
// which the estimate and its upper bound below share.
struct EpsEffect {
  double change2 = 0, output2 = 0;  // ||phi(c1 xhat) - phi(c2 xhat)||^2, ||phi(c2 xhat)||^2
  double estimate() const { return output2 == 0 ? 0.0 : std::sqrt(change2 / output2); }
};
EpsEffect eps_effect(const Eigen::VectorXd& xhat, double c1, double c2, const NsConfig& cfg) {
  EpsEffect e;
  for (Eigen::Index i = 0; i < xhat.size(); ++i) {
    const double a = checks::scalar_map(cfg, c1 * xhat(i)), b = checks::scalar_map(cfg, c2 * xhat(i));
    e.change2 += (a - b) * (a - b);
    e.output2 += b * b;
  }
  return e;
}

// The estimate for the exact normalized singular values x, bounded from above from `at`, the
// effect at a spectrum x~ with |x~_i - x_i| <= delta (the bounds' spectrum: no SVD of its own).
// Per singular value, with f(x) = phi(c1 x) - phi(c2 x) and h(x) = phi(c2 x), every x_i and x~_i
// in I = [0, X], X = max x~ + delta:
//   c1 phi'(c1 z) - c2 phi'(c2 z) = int_c2^c1 (phi'(c z) + c z phi''(c z)) dc, so
//   |f(x~_i) - f(x_i)| <= delta |c1 - c2| (D1 + W D2) and |h(x~_i) - h(x_i)| <= delta c2 D1,
// D1, D2 bounds on |phi'|, |phi''| over [0, W], W = max(c1, c2) X (map_derivative_bounds). Over
// the p values: ||f(x)|| <= ||f(x~)|| + sqrt(p) delta |c1 - c2| (D1 + W D2) and ||h(x)|| >=
// ||h(x~)|| - sqrt(p) delta c2 D1, whose ratio bounds the estimate at x (+inf where the denominator
// is not positive).
double eps_effect_upper_bound(const EpsEffect& at, const Eigen::VectorXd& xtilde, double delta, double c1, double c2,
                              const NsConfig& cfg) {
  const double w = std::max(c1, c2) * (xtilde.maxCoeff() + delta);
  const MapDerivativeBounds d = map_derivative_bounds(cfg.coeffs, cfg.steps, {0.0, w});
  const double spread = std::sqrt(static_cast<double>(xtilde.size())) * delta;
  const double low = std::sqrt(at.output2) - spread * c2 * d.first;
  return low > 0 ? (std::sqrt(at.change2) + spread * std::abs(c1 - c2) * (d.first + w * d.second)) / low
                 : std::numeric_limits<double>::infinity();
}

// K2's prediction takes the bounds' spectrum where its upper bound above is within this share of
// the rounding bound of the distance (the check then looser by at most 1%), the accurate but
// costlier SVD (dgesdd) elsewhere: a large eps against ||G||, or a schedule whose
// derivatives are large.
inline constexpr double kEpsEffectSlackShare = 0.01;

// K2 [bounded]. Positive scaling: the normalization divides s out, except for the eps in
// ||sG|| + eps, whose effect on the exact map is predicted from the singular values; the rest is
// the rounding of two computations (B(G) + B(sG)).
void positive_scaling(const KernelUnderTest& impl, const KernelDomain& d) {
  const TestMatrix g = draw(any_shape(d));
  const NsConfig cfg = draw_config(d);
  const double s = std::exp2(*rc::gen::inRange(-4000, 4001) / 1000.0);  // 1/16 .. 16
  const MatD scaled = g.values * s;
  const double norm = std::sqrt(g.values.cwiseAbs2().sum());
  RC_PRE(norm > 0.0);
  if (!checks::entries_normal_for(g.values, cfg) || !checks::entries_normal_for(scaled, cfg)) {
    RC_CLASSIFY(true, "an entry of G or sG is subnormal in the compute or normalization dtype (judged from the input): "
                      "bound not applicable");
    return;
  }
  const MatD of_scaled = impl.run(scaled, cfg), of_plain = impl.run(g.values, cfg);
  if (checks::outside_the_premise(g.values, cfg, {of_scaled, of_plain},
                                 [&] { return reference_outputs(impl, scaled, of_scaled, g.values, of_plain, cfg); }))
    return;
  const checks::Tolerance& tol = checks::tolerance(checks::Claim::scaling, cfg.kernel, cfg.dtype);
  // B(sG) from G's spectrum: sG's singular values are s times G's (to u64 ||sG||, the float64
  // product's rounding), normalized by ||sG|| + eps
  const double scaled_norm = std::sqrt(scaled.cwiseAbs2().sum());
  const Eigen::VectorXd spectrum = checks::remembered_singular_values(g.values);
  const Eigen::VectorXd scaled_spectrum = spectrum * (s / (scaled_norm + cfg.eps));
  const double bound =
      tol.bound(checks::rounding_bound(g.values, cfg) + checks::rounding_bound(scaled_spectrum, scaled.rows(), scaled.cols(), cfg));
  const double c1 = s * norm / (s * norm + cfg.eps), c2 = norm / (norm + cfg.eps);
  // from the bounds' spectrum: within bounds_spectrum_error sigma_max <= that times ||G|| of the
  // exact one (the factor covers the float64 ||G||'s own rounding, below m n u64 <= 1e-6)
  const Eigen::VectorXd xtilde = spectrum / norm;
  const EpsEffect at_xtilde = eps_effect(xtilde, c1, c2, cfg);
  double predicted = eps_effect_upper_bound(
      at_xtilde, xtilde, checks::bounds_spectrum_error(g.values.rows(), g.values.cols()) * (1 + 1e-6), c1, c2, cfg);
  if (!(predicted - at_xtilde.estimate() <= kEpsEffectSlackShare * bound))
    // the accurate float64 spectrum (dgesdd, each value within p(n) u64 sigma_max: svd_error)
    predicted = eps_effect(singular_values(g.values) / norm, c1, c2, cfg).estimate();
  RC_LOG() << "s = " << exact(s) << ", predicted eps effect " << predicted << '\n';
  // measured <= predicted + bound, written so that the recorded ratio is the rounding part's
  assert_within("||NS(sG) - NS(G)|| / ||NS(G)|| - predicted eps effect (s = " + exact(s) + ")",
                checks::distance_relative_to_the_map(of_scaled, of_plain, g.values, cfg) - predicted, bound, tol.derivation);
}

// K3 [bounded]. NS(U G V^T) = U NS(G) V^T in exact arithmetic for orthogonal U, V: structured
// transforms (signs, a permutation and two Householder reflections per side, applied in float64 in
// O(m n); structured_orthogonal.hpp), whose rounding the bound accounts for.
void orthogonal_equivariance(const KernelUnderTest& impl, const KernelDomain& d) {
  const TestMatrix g = draw(any_shape(d));
  const NsConfig cfg = draw_config(d);
  const checks::StructuredOrthogonal u = *checks::structured_orthogonals(g.values.rows());
  const checks::StructuredOrthogonal v = *checks::structured_orthogonals(g.values.cols());
  const auto rotate = [&](const MatD& m) { return u.times(v.times_from_the_right_transposed(m)); };
  const MatD rotated = rotate(g.values);
  const MatD plain = impl.run(g.values, cfg), of_rotated = impl.run(rotated, cfg);
  if (checks::outside_the_premise(g.values, cfg, {plain, of_rotated},
                                 [&] { return reference_outputs(impl, g.values, plain, rotated, of_rotated, cfg); }))
    return;
  const checks::Tolerance& tol = checks::tolerance(checks::Claim::orthogonal_equivariance, cfg.kernel, cfg.dtype);
  assert_within("||NS(U G V^T) - U NS(G) V^T|| / ||NS(G)||", checks::distance_relative_to_the_map(of_rotated, rotate(plain), g.values, cfg),
                // B(G) + B(UGV^T) = 2 B(G): U G V^T has G's singular values (the float64 transform's
                // rounding moves them, which orthogonal_transform_rounding accounts for)
                tol.bound(2 * checks::rounding_bound(g.values, cfg) +
                          checks::orthogonal_transform_rounding(g.values, cfg, u.rounding() + v.rounding())),
                tol.derivation);
}

// K4 [bounded]. Row and column permutations commute with NS in exact arithmetic. Whether they do
// bit for bit depends on the GEMM's summation order and is measured, not claimed
// (kernel_quantified.cpp reports the exact fractions).
void permutation_equivariance(const KernelUnderTest& impl, const KernelDomain& d) {
  const TestMatrix g = draw(any_shape(d));
  const NsConfig cfg = draw_config(d);
  const auto rows = *checks::permutations(g.values.rows());
  const auto cols = *checks::permutations(g.values.cols());
  const MatD input = checks::permuted(g.values, rows, cols);
  const MatD plain = impl.run(g.values, cfg), actual = impl.run(input, cfg);
  if (checks::outside_the_premise(g.values, cfg, {plain, actual},
                                 [&] { return reference_outputs(impl, g.values, plain, input, actual, cfg); }))
    return;
  const MatD expected = checks::permuted(plain, rows, cols);
  RC_CLASSIFY(compare_bits(actual, expected, cfg.dtype).identical, "bit-identical");
  const checks::Tolerance& tol = checks::tolerance(checks::Claim::permutation_equivariance, cfg.kernel, cfg.dtype);
  assert_within("||NS(P G Q) - P NS(G) Q|| / ||NS(G)||", checks::distance_relative_to_the_map(actual, expected, g.values, cfg),
                tol.bound(2 * checks::rounding_bound(g.values, cfg)), tol.derivation);  // B(PGQ) = B(G): the same singular values
}

// K5 [bounded, derived interval]. The singular values of NS(G) lie in the band the scalar map
// phi takes the input's normalized singular values to, widened step by step by the rounding of
// that step (convergence_band in convergence_band.hpp: Weyl's inequality per step, exact interval images
// of each quintic). For keller x 5 and x >= 0.01 the rounding-free band is SPEC's
// [0.682, 1.134]. Where the rounding slack is wider than the band itself (bf16, whose u = 2^-8
// is amplified up to 486 times by the iteration; fp16 with compute accumulation) the check is
// weak and the case is tagged; kernel_quantified.cpp measures how far bf16 leaves the exact band.
void convergence_band(const KernelUnderTest& impl, const KernelDomain& d) {
  const TestMatrix g = draw(any_shape(d));
  const NsConfig cfg = draw_config(d);
  const MatD out = impl.run(g.values, cfg);
  // the spectra first where they exist (a finite output): the output's, remembered, also settles
  // the premise's divergence test (premises.hpp: diverged)
  const std::optional<checks::BandSpectra> known = all_finite(out) ? std::optional(checks::band_spectra(g.values, out, cfg)) : std::nullopt;
  if (checks::outside_the_premise(g.values, cfg, {out}, [&] { return reference_output(impl, g.values, cfg, out); })) return;
  const checks::BandSpectra spectra = known ? *known : checks::band_spectra(g.values, out, cfg);
  const checks::Band band = checks::convergence_band(spectra.x, cfg, g.shape.long_side(), g.shape.square(), true, spectra.error);
  const Eigen::VectorXd& sigma = spectra.sigma;
  RC_CLASSIFY(band.hi < 2.0, "band informative (hi < 2)");
  RC_LOG() << "band [" << exact(band.lo) << ", " << exact(band.hi) << "]\n";
  ++case_log().checked;
  for (Eigen::Index i = 0; i < sigma.size(); ++i)
    if (!(sigma(i) >= band.lo && sigma(i) <= band.hi))
      fail_predicate("singular value " + std::to_string(i) + " = " + exact(sigma(i)) + " outside the band [" + exact(band.lo) +
                     ", " + exact(band.hi) + "] derived from the input's normalized singular values (convergence_band.hpp: "
                     "convergence_band, Weyl's inequality per step)");
}

// K6 [bounded]. The gram kernel computes the standard kernel's polynomial by another loop: in
// float64 the two agree to 1e-12 relative (SPEC), on wide, tall and square matrices of every
// spectrum, for DeepSpeed's configuration (keller, 5 steps).
void gram_matches_standard_fp64(const KernelUnderTest& impl, const KernelDomain& d) {
  const TestMatrix g = draw(any_shape(d));
  NsConfig cfg;
  cfg.dtype = DType::fp64;
  const checks::Tolerance& tol = checks::tolerance(checks::Claim::gram_matches_standard, Kernel::gram, DType::fp64);
  assert_within("rel_diff(NS_gram(G), NS_standard(G)) in fp64",
                rel_diff(impl.run(g.values, checks::with_kernel(cfg, Kernel::gram)),
                         impl.run(g.values, checks::with_kernel(cfg, Kernel::standard))),
                tol.bound(0.0), tol.derivation);
}

// K6 [bounded] in the narrow dtypes, any schedule and step count: within the two loops' own
// rounding bounds. Premise of the first-order bounds: the Gram loop in fp16/bf16 leaves it on
// ill-conditioned and rank-deficient inputs, where the outputs
// stay finite but their distance is no longer first order in u.
void gram_matches_standard_narrow(const KernelUnderTest& impl, const KernelDomain& d) {
  const TestMatrix g = draw(any_shape(d));
  NsConfig cfg = draw_config(d);
  cfg.dtype = *checks::narrow_dtypes();
  cfg.accumulate = d.compute_accumulation ? *checks::accumulations(cfg.dtype) : Accumulate::fp32;
  const NsConfig gram = checks::with_kernel(cfg, Kernel::gram), standard = checks::with_kernel(cfg, Kernel::standard);
  const MatD of_gram = impl.run(g.values, gram), of_standard = impl.run(g.values, standard);
  if (checks::outside_the_premise(g.values, gram, {of_gram}, [&] { return reference_output(impl, g.values, gram, of_gram); }) |
      checks::outside_the_premise(g.values, standard, {of_standard},
                                 [&] { return reference_output(impl, g.values, standard, of_standard); }))
    return;
  if (checks::outside_first_order_regime(g.values, {&gram, &standard})) return;
  const checks::Tolerance& tol = checks::tolerance(checks::Claim::gram_matches_standard, Kernel::gram, cfg.dtype);
  assert_within("||NS_gram(G) - NS_standard(G)|| / ||NS(G)||", checks::distance_relative_to_the_map(of_gram, of_standard, g.values, cfg),
                tol.bound(checks::rounding_bound(g.values, gram) + checks::rounding_bound(g.values, standard)), tol.derivation);
}

// [bounded] The two ways of computing the n x n products (mirrored upper triangle, or both
// triangles as PyTorch does) compute the same map within their own rounding, every dtype.
void products_agree(const KernelUnderTest& impl, const KernelDomain& d) {
  const TestMatrix g = draw(any_shape(d));
  const NsConfig cfg = draw_config(d);
  NsConfig symmetric = cfg, full = cfg;
  symmetric.products = Products::symmetric;
  full.products = Products::full;
  const MatD of_symmetric = impl.run(g.values, symmetric), of_full = impl.run(g.values, full);
  if (checks::outside_the_premise(g.values, symmetric, {of_symmetric},
                                 [&] { return reference_output(impl, g.values, symmetric, of_symmetric); }) |
      checks::outside_the_premise(g.values, full, {of_full}, [&] { return reference_output(impl, g.values, full, of_full); }))
    return;
  const checks::Tolerance& tol = checks::tolerance(checks::Claim::products_agree, cfg.kernel, cfg.dtype);
  assert_within("||NS_symmetric(G) - NS_full(G)|| / ||NS(G)||", checks::distance_relative_to_the_map(of_symmetric, of_full, g.values, cfg),
                tol.bound(2 * checks::rounding_bound(g.values, cfg)), tol.derivation);
}

// K8 [bounded]. A 1 x n matrix has a single singular value x = ||g|| / (||g|| + eps), so
// NS(g) = phi(x) g / ||g|| exactly (n x 1 follows by K1's exact transpose). The premise matters
// since the `cans` schedule: its first step maps x = 1 to 1.9915, 0.0023 below its second step's
// repelling fixed point 1.9938, so one bf16 rounding of x above 1 (x = 1 + 2^-8) grows to 1e57 in
// five steps.
void row_vector(const KernelUnderTest& impl, const KernelDomain& d) {
  const TestMatrix g = draw(row_vector_shape(d));
  const NsConfig cfg = draw_config(d);
  const double norm = std::sqrt(g.values.cwiseAbs2().sum());
  RC_PRE(norm > 0.0);
  const MatD expected = g.values * (checks::scalar_map(cfg, norm / (norm + cfg.eps)) / norm);
  const MatD out = impl.run(g.values, cfg);
  if (checks::outside_the_premise(g.values, cfg, {out}, [&] { return reference_output(impl, g.values, cfg, out); })) return;
  const checks::Tolerance& tol = checks::tolerance(checks::Claim::vector_closed_form, cfg.kernel, cfg.dtype);
  assert_within("rel_diff(NS(g), phi(x) g / ||g||)", rel_diff(out, expected),
                tol.bound(checks::RowVectorErrorBound(cfg, g.values.size()).relative(norm)), tol.derivation);
}

// REF [bounded]. Agreement with the reference: the implementation's distance to the float64 map
// (the reference in fp64, the same kernel and schedule) against the reference's own distance to
// it. Derivation (the golden rows of tolerances.hpp, which bound DeepSpeed's own kernels the
// same way):
//   fp32: both are fp32 computations of one map with GEMMs summed in different orders, two draws
//     of one rounding-noise process, so their distances to the map are alike; bound 2 S, S the
//     reference's own error. S is the largest of the reference's errors on G and on two
//     row/column permutations of G (NS is permutation-equivariant: equivalent evaluations with
//     other summation orders), so that it measures the kernel's error and not one lucky draw
//     (the S5 bound, sharding/allreduce_bound.hpp, makes S the same way).
//   bf16/fp16 with fp32 accumulation: 2 (u_dtype / u_fp32) S_fp32: only the rounding of each
//     stored result changes, and the first-order error is linear in the unit roundoff (row
//     golden_bf16; a single narrow-dtype draw is too noisy to scale by).
//   accumulation in the compute dtype: 2 S in that configuration (the fp32 argument, in the
//     configured dtype).
//   fp64: the own error against the float64 map is zero by definition, so the a-priori bound:
//     both fp64 results are within B(G) of the exact map, so rel_diff(yours, reference) <= 2 B(G).
// Claimed for sides >= kTwoDrawMinSide, as S5 claims it (tolerances.hpp: below that one more draw of
// a small matrix's rounding error exceeds twice the largest of a few too often).
void agreement_with_reference(const KernelUnderTest& impl, const KernelDomain& d) {
  const Shape shape = *rc::gen::suchThat(any_shape(d), [](const Shape& s) { return s.short_side() >= checks::kTwoDrawMinSide; });
  const TestMatrix g = draw(rc::gen::just(shape));
  const NsConfig cfg = draw_config(d);
  const auto rows = *rc::gen::container<std::vector<std::vector<Eigen::Index>>>(2, checks::permutations(shape.rows));
  const auto cols = *rc::gen::container<std::vector<std::vector<Eigen::Index>>>(2, checks::permutations(shape.cols));
  const MatD yours = impl.run(g.values, cfg);
  note_matrix("output", yours);
  // S (fp64 needs none): the own error of the configuration own_cfg on G and on two permutations of
  // it, against the oracle (own_cfg's oracle is cfg's: with_dtype changes the dtype only). Where
  // own_cfg is cfg, its run on G is `ours`.
  const bool measures_s = cfg.dtype != DType::fp64;
  const bool scaled_fp32 = measures_s && cfg.dtype != DType::fp32 && cfg.accumulate == Accumulate::fp32;
  const NsConfig own_cfg = scaled_fp32 ? checks::with_dtype(cfg, DType::fp32) : cfg;
  Batch inputs;
  if (measures_s) inputs = {checks::permuted(g.values, rows[0], cols[0]), checks::permuted(g.values, rows[1], cols[1])};
  if (scaled_fp32) inputs.push_back(g.values);
  // The float64 oracle, about two fp32 runs of work (reports/performance.md), on one core; on the
  // other the reference's run on G and, where the runs go side by side (large: each its own bits
  // either way), S's first run, so that neither core waits for the other; S's other runs after it
  // (ns_batch: side by side, or one run's panels on both cores). A case outside the premise wastes
  // that first run; it is rare, and small cases run nothing early.
  const bool large = g.values.size() >= checks::kSideBySideMinElements;
  Batch runs;
  const auto [oracle, ours] = checks::side_by_side(
      large, [&] { return checks::ns(g.values, checks::oracle_config(cfg)); },
      [&] {
        MatD reference = checks::ns(g.values, cfg);
        if (large && measures_s) runs.push_back(checks::ns(inputs[0], own_cfg));
        return reference;
      });
  if (is_zero(oracle)) {
    ++case_log().checked;
    if (!is_zero(yours)) fail_bits("NS(G) and the reference's exact zero", yours, oracle, cfg.dtype);
    return;
  }
  note_matrix("reference", ours);
  if (checks::outside_the_premise(g.values, cfg, {yours}, [&] { return Batch{ours}; })) return;
  if (cfg.dtype == DType::fp64) {
    assert_within("rel_diff(yours, reference) in fp64", rel_diff(yours, ours), 2 * checks::rounding_bound(g.values, cfg),
                  "2 B(G): both fp64 results are within the a-priori rounding bound B(G) of the exact map "
                  "(tolerances.hpp); the float64 oracle has no error of its own to scale by");
    return;
  }
  for (MatD& run : checks::ns_batch(Batch(inputs.begin() + static_cast<std::ptrdiff_t>(runs.size()), inputs.end()), own_cfg))
    runs.push_back(std::move(run));
  double s = rel_diff(scaled_fp32 ? runs[2] : ours, oracle);
  for (std::size_t k = 0; k < 2; ++k) s = std::max(s, rel_diff(runs[k], checks::permuted(oracle, rows[k], cols[k])));
  const double factor = scaled_fp32 ? unit_roundoff(cfg.dtype) / unit_roundoff(DType::fp32) : 1.0;
  const checks::Tolerance& tol = checks::tolerance(scaled_fp32 ? checks::Claim::golden_bf16 : checks::Claim::golden_fp32, cfg.kernel,
                                                 scaled_fp32 ? DType::bf16 : DType::fp32);
  assert_within("rel_diff(yours, float64 map)", rel_diff(yours, oracle), tol.bound(0.0, factor * s),
                std::string(scaled_fp32 ? "2 (u_dtype / u_fp32) S_fp32" : "2 S") +
                    ", S = the reference's own error, max over G and two permutations of it; " + std::string(tol.derivation));
}

// ---------------------------------------------------------------------------------------------
// Pinned shapes a property cannot use.

std::string_view square_excluded(const Shape& s) { return s.square() ? "the shape is square" : ""; }
std::string_view not_a_row_vector(const Shape& s) { return s.rows == 1 ? "" : "the shape is not 1 x n"; }
std::string_view not_square(const Shape& s) { return s.square() ? "" : "the shape is not square"; }
std::string_view short_side_too_small(const Shape& s) {
  return s.short_side() >= checks::kTwoDrawMinSide ? "" : "the bound is claimed for sides >= 16 (tolerances.hpp: kTwoDrawMinSide)";
}

}  // namespace

std::string_view promise_name(KernelPromise p) { return p == KernelPromise::map ? "map" : "bitwise"; }

KernelDomain every_configuration(Eigen::Index max_dim) { return {checks::ns_configs(), max_dim, std::nullopt}; }

KernelDomain one_configuration(const NsConfig& cfg, Eigen::Index max_dim, std::optional<checks::Shape> shape) {
  if (max_dim < kMinDrawnSide || max_dim > kMaxDrawnSide)
    throw InvalidField("max_dim", "must be between " + std::to_string(kMinDrawnSide) + " and " + std::to_string(kMaxDrawnSide) + ", got " + std::to_string(max_dim));
  if (shape && (shape->rows < 1 || shape->cols < 1 || shape->rows * shape->cols > kMaxPinnedElements))
    throw InvalidField("shape", "must be two sides of at least 1 with at most " + std::to_string(kMaxPinnedElements) +
                                    " elements (2^26, e.g. 4096 x 16384), got " + std::to_string(shape->rows) + "x" +
                                    std::to_string(shape->cols));
  return {rc::gen::just(cfg), max_dim, shape};
}

// The catalogue, in the order results list it. A function-local table: front ends register tests
// from it before main runs.
std::span<const KernelProperty> kernel_properties() {
  static const KernelProperty table[] = {
      {.code = "K1",
       .name = "transpose_of_input_transposes_output_exactly",
       .claim = "NS(G^T) = NS(G)^T bit for bit (non-square G; not with accumulate=compute)",
       .promise = KernelPromise::bitwise,
       .excluded_shape = square_excluded,
       .body = transpose},
      {.code = "K7",
       .name = "batched_equals_loop_exactly",
       .claim = "a batch gives each matrix's own bits",
       .promise = KernelPromise::bitwise,
       .needs = kBatches,
       .body = batched_equals_loop},
      {.code = "K7",
       .name = "batched_matches_loop_within_rounding",
       .claim = "a batch gives each matrix's own NS within B(G) + B(G)",
       .promise = KernelPromise::map,
       .needs = kBatches,
       .body = batched_matches_loop_within_rounding},
      {.code = "K10",
       .name = "results_do_not_depend_on_the_thread_count",
       .claim = "1, 2 and 3 threads give the same bits",
       .promise = KernelPromise::bitwise,
       .needs = kBatches | kThreadCount,
       .body = thread_count},
      {.code = "K10",
       .name = "repeated_calls_give_the_same_bits",
       .claim = "the same input gives the same bits twice",
       .promise = KernelPromise::bitwise,
       .body = repeated_calls},
      {.code = "K10",
       .name = "batch_position_does_not_change_the_bits",
       .claim = "a matrix's bits do not depend on its batch position, its neighbours or the heap layout",
       .promise = KernelPromise::bitwise,
       .needs = kBatches,
       .body = batch_position},
      {.code = "K10",
       .name = "memory_offset_does_not_change_the_bits",
       .claim = "a matrix's bits do not depend on where its buffer starts",
       .promise = KernelPromise::bitwise,
       .needs = kCallerBuffer,
       .body = memory_offset},
      {.code = "K2",
       .name = "power_of_two_scaling_is_exact_when_eps_is_absorbed",
       .claim = "NS(2^k G) = NS(G) bit for bit where scaling is exact and eps is absorbed",
       .promise = KernelPromise::map,
       .body = power_of_two_scaling},
      {.code = "K2",
       .name = "positive_scaling_changes_the_result_only_by_eps_and_rounding",
       .claim = "NS(s G) = NS(G) up to the predicted eps effect, within B(G) + B(sG)",
       .promise = KernelPromise::map,
       .body = positive_scaling},
      {.code = "K3",
       .name = "orthogonal_transformations_commute_with_ns_within_rounding",
       .claim = "NS(U G V^T) = U NS(G) V^T within B(G) + B(UGV^T)",
       .promise = KernelPromise::map,
       .body = orthogonal_equivariance},
      {.code = "K4",
       .name = "permutations_commute_with_ns_within_rounding",
       .claim = "NS(P G Q) = P NS(G) Q within B(G) + B(PGQ)",
       .promise = KernelPromise::map,
       .body = permutation_equivariance},
      {.code = "K5",
       .name = "singular_values_stay_in_the_band_of_the_scalar_map",
       .claim = "every singular value of NS(G) lies in the rounding-widened band of the scalar map",
       .promise = KernelPromise::map,
       .body = convergence_band},
      {.code = "K6",
       .name = "gram_matches_standard_to_1e12_in_fp64",
       .claim = "the gram and standard kernels agree to 1e-12 in fp64",
       .promise = KernelPromise::map,
       .needs = kAnyConfig,
       .body = gram_matches_standard_fp64},
      {.code = "K6",
       .name = "gram_matches_standard_within_rounding_in_narrow_dtypes",
       .claim = "the gram and standard kernels agree within their rounding bounds in fp32, bf16, fp16",
       .promise = KernelPromise::map,
       .needs = kAnyConfig,
       .body = gram_matches_standard_narrow},
      {.code = "K6",
       .name = "gram_is_standard_on_square_matrices_in_fp32_and_fp64",
       .claim = "on square matrices gram is standard, bit for bit",
       .promise = KernelPromise::bitwise,
       .needs = kAnyConfig,
       .excluded_shape = not_square,
       .body = gram_is_standard_on_square},
      {.code = "K6",
       .name = "symmetric_products_match_full_products_within_rounding",
       .claim = "products=symmetric and products=full agree within their rounding",
       .promise = KernelPromise::map,
       .needs = kAnyConfig,
       .body = products_agree},
      {.code = "K8",
       .name = "zero_matrix_maps_to_zero",
       .claim = "NS(0) = 0 exactly",
       .promise = KernelPromise::map,
       .body = zero_matrix},
      {.code = "K8",
       .name = "non_finite_input_gives_non_finite_output",
       .claim = "a NaN or Inf in G gives a non-finite output",
       .promise = KernelPromise::map,
       .body = non_finite_input},
      {.code = "K8",
       .name = "extreme_magnitudes_are_exact_flagged_or_documented_zero",
       .claim = "tiny and huge magnitudes: exact, flagged non-finite, or the documented zero",
       .promise = KernelPromise::bitwise,
       .body = extreme_magnitudes},
      {.code = "K8",
       .name = "row_vector_maps_to_its_direction_times_the_scalar_map",
       .claim = "NS of a 1 x n matrix is phi(x) g / ||g||, within its running error bound",
       .promise = KernelPromise::map,
       .excluded_shape = not_a_row_vector,
       .body = row_vector},
      {.code = "K11",
       .name = "input_is_left_untouched_and_not_aliased",
       .claim = "the caller's input keeps its bits and the output is a new array",
       .promise = KernelPromise::map,
       .needs = kCallerBuffer,
       .body = input_untouched},
      {.code = "REF",
       .name = "agrees_with_the_reference_within_its_own_error",
       .claim = "distance to the float64 map within 2x the reference's own error (sides >= 16)",
       .promise = KernelPromise::map,
       .compares_with_the_reference = true,
       .excluded_shape = short_side_too_small,
       .body = agreement_with_reference},
  };
  return table;
}

const KernelProperty* find_kernel_property(std::string_view name) {
  for (const KernelProperty& p : kernel_properties())
    if (p.name == name) return &p;
  return nullptr;
}

std::string not_applicable(const KernelProperty& p, const KernelUnderTest& impl, const std::optional<checks::Shape>& pinned) {
  if (const unsigned missing = p.needs & ~impl.abilities()) return impl.name() + " " + ability_words(missing);
  if (p.compares_with_the_reference && impl.is_reference()) return "the reference would be compared with itself";
  if (pinned && p.excluded_shape) return std::string(p.excluded_shape(*pinned));
  return "";
}

}  // namespace nsv::checks
