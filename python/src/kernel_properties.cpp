#include "kernel_properties.hpp"

#include <pybind11/stl.h>

#include <cmath>
#include <limits>
#include <optional>
#include <sstream>

#include "generators/floats.hpp"
#include "generators/matrices.hpp"
#include "generators/shapes.hpp"
#include "generators/transforms.hpp"
#include "nsv/invalid_field.hpp"
#include "oracle.hpp"
#include "sharding/allreduce_bound.hpp"
#include "property_runner.hpp"
#include "scaling_premise.hpp"
#include "tolerances.hpp"
#include "user_kernel.hpp"

namespace nsv::python {
namespace {

using props::Shape;
using props::TestMatrix;

struct KernelCheck {
  UserKernel fn;
  NsConfig cfg;
  Eigen::Index max_dim;
  std::optional<Shape> shape;  // every matrix of this shape (the caller's own layer), else any shape
};

rc::Gen<Shape> any_shape(const KernelCheck& c) { return c.shape ? rc::gen::just(*c.shape) : props::shapes(c.max_dim); }
rc::Gen<Shape> non_square_shape(const KernelCheck& c) {
  return c.shape ? rc::gen::just(*c.shape) : props::non_square_shapes(c.max_dim);
}

void describe(const TestMatrix& g) {
  std::ostringstream s;
  props::showValue(g, s);
  note_input(s.str());
}

rc::Gen<TestMatrix> any_matrix(const KernelCheck& c) { return props::matrices(any_shape(c)); }

TestMatrix draw(const rc::Gen<TestMatrix>& gen) {
  TestMatrix g = *gen;
  describe(g);
  return g;
}

using props::shard::permuted;  // sharding/allreduce_bound.hpp

bool is_zero(const MatD& m) { return (m.array() == 0.0).all(); }

// As kernel_bounded.cpp: a bounded claim is "within the first-order rounding bound, unless an
// output diverged", and divergence is allowed only outside the first-order regime of the
// configuration (oracle.hpp), where the linearized bound does not apply. True when an output
// diverged there (the case is then classified, not asserted).
bool diverged_where_allowed(const MatD& g, const NsConfig& cfg, std::initializer_list<const MatD*> outputs) {
  bool any = false;
  for (const MatD* o : outputs) any = any || props::diverged(*o, cfg);
  if (!any) return false;
  RC_CLASSIFY(true, "diverged (outside the first-order regime: bound not applicable)");
  if (props::first_order_regime(g, cfg))
    fail_predicate("an output diverged although the rounding-widened band of the configuration stays inside the basin "
                   "of attraction");
  return true;
}

// ---------------------------------------------------------------------------------------------
// Exact claims.

void transpose(const KernelCheck& c) {
  const TestMatrix g = draw(props::matrices(non_square_shape(c)));
  assert_bit_identical("NS(G^T) and NS(G)^T", c.fn(g.values.transpose()), c.fn(g.values).transpose(), c.cfg.dtype);
}

void batched_equals_loop(const KernelCheck& c) {
  const Shape shape = *any_shape(c);
  const auto count = static_cast<std::size_t>(*rc::gen::inRange(2, 7));
  const auto ms = *rc::gen::container<std::vector<TestMatrix>>(count, props::matrices(rc::gen::just(shape)));
  note_input("a batch of " + std::to_string(count) + " " + std::to_string(shape.rows) + "x" + std::to_string(shape.cols) +
             " matrices");
  const Batch out = c.fn.batched(props::values_of(ms));
  for (std::size_t i = 0; i < ms.size(); ++i)
    assert_bit_identical("matrix " + std::to_string(i) + " of the batched call and NS of it alone", out[i], c.fn(ms[i].values),
                         c.cfg.dtype);
}

void repeated_calls(const KernelCheck& c) {
  const TestMatrix g = draw(any_matrix(c));
  const MatD first = c.fn(g.values);
  assert_bit_identical("a second call and the first on the same input", c.fn(g.values), first, c.cfg.dtype);
}

void batch_position(const KernelCheck& c) {
  const TestMatrix g = draw(any_matrix(c));
  const auto neighbours = *rc::gen::container<std::vector<TestMatrix>>(static_cast<std::size_t>(*rc::gen::inRange(1, 5)),
                                                                       props::matrices(rc::gen::just(g.shape)));
  const auto position = *rc::gen::inRange<std::size_t>(0, neighbours.size() + 1);
  Batch batch = props::values_of(neighbours);
  batch.insert(batch.begin() + static_cast<std::ptrdiff_t>(position), g.values);
  RC_TAG("position " + std::to_string(position));
  assert_bit_identical("the matrix at batch position " + std::to_string(position) + " of " + std::to_string(batch.size()) +
                           " and the same matrix as a batch of one",
                       c.fn.batched(batch).at(position), c.fn.batched({g.values}).at(0), c.cfg.dtype);
}

void memory_offset(const KernelCheck& c) {
  const TestMatrix g = draw(any_matrix(c));
  const int offset = *rc::gen::inRange(1, 17);
  assert_bit_identical("NS of G stored " + std::to_string(offset) + " elements into a buffer and NS of G on its own",
                       c.fn.at_offset(g.values, offset), c.fn(g.values), c.cfg.dtype);
}

// K2 exact: as power_of_two_scaling_is_exact_when_eps_is_absorbed (kernel_exact.cpp).
void power_of_two_scaling(const KernelCheck& c) {
  const TestMatrix g = draw(any_matrix(c));
  const int k = *rc::gen::inRange(-6, 7);
  const double norm = std::sqrt(g.values.cwiseAbs2().sum());
  RC_PRE(norm > 0.0);
  // Lift G so that both norms are at least 4 eps / u_nd (eps then at most a quarter ULP).
  const double threshold = 4 * c.cfg.eps / unit_roundoff(normalization_dtype(c.cfg));
  const int lift = std::max(0, static_cast<int>(std::ceil(std::log2(threshold / (norm * std::min(1.0, std::ldexp(1.0, k)))))));
  const MatD base = g.values * std::ldexp(1.0, lift);
  RC_PRE(props::power_of_two_scaling_is_exact(base, k, c.cfg));
  assert_bit_identical("NS(2^" + std::to_string(k) + " G) and NS(G), G lifted by 2^" + std::to_string(lift),
                       c.fn(base * std::ldexp(1.0, k)), c.fn(base), c.cfg.dtype);
}

void zero_matrix(const KernelCheck& c) {
  const Shape shape = *any_shape(c);
  note_input("the zero matrix " + std::to_string(shape.rows) + "x" + std::to_string(shape.cols));
  const MatD zero = MatD::Zero(shape.rows, shape.cols);
  const MatD out = c.fn(zero);
  if (!is_zero(out)) fail_bits("NS(0) and 0", out, zero, c.cfg.dtype);
}

void non_finite_input(const KernelCheck& c) {
  const TestMatrix g = draw(any_matrix(c));
  props::FloatKnobs<double> knobs;
  knobs.allow_nan = true;
  knobs.allow_inf = true;
  const double bad = *rc::gen::suchThat(props::floats<double>(knobs), [](double v) { return !std::isfinite(v); });
  const auto index = *rc::gen::inRange<Eigen::Index>(0, g.values.size());
  MatD poisoned = g.values;
  poisoned.data()[index] = bad;
  if (all_finite(c.fn(poisoned)))
    fail_predicate("an input holding " + exact(bad) + " at flat index " + std::to_string(index) +
                   " gave an all-finite output: a non-finite gradient must give a non-finite update (flagged), never a "
                   "silent finite answer");
}

// K8 by case, as extreme_magnitudes_are_exact_flagged_or_documented_zero (kernel_exact.cpp).
void extreme_magnitudes(const KernelCheck& c) {
  const TestMatrix g = draw(any_matrix(c));
  const int k = *rc::gen::resize(100, rc::gen::weightedOneOf<int>({{1, rc::gen::inRange(-130, -99)},
                                                                   {1, rc::gen::inRange(-30, 31)},
                                                                   {1, rc::gen::inRange(10, 21)},
                                                                   {1, rc::gen::inRange(121, 130)}}));
  const MatD scaled = (g.values * std::ldexp(1.0, k)).cast<float>().cast<double>();
  const MatD out = c.fn(scaled);
  const std::string what = "G scaled by 2^" + std::to_string(k);
  const props::ExtremeCase kind = props::extreme_case(g.values, scaled, k, c.cfg);
  RC_CLASSIFY(true, props::extreme_case_label(kind));
  const MatD zero = MatD::Zero(out.rows(), out.cols());
  switch (kind) {
    case props::ExtremeCase::input_overflows:
    case props::ExtremeCase::entry_overflows:
      if (all_finite(out)) fail_predicate(what + ": " + props::extreme_case_label(kind) + ", but the output is finite");
      break;
    case props::ExtremeCase::norm_overflows:
    case props::ExtremeCase::underflows_to_zero:
      if (!is_zero(out)) fail_bits(what + " (" + props::extreme_case_label(kind) + "): NS and 0", out, zero, c.cfg.dtype);
      break;
    case props::ExtremeCase::exact: assert_bit_identical("NS(" + what + ") and NS(G)", out, c.fn(g.values), c.cfg.dtype); break;
    case props::ExtremeCase::finite:
      if (!all_finite(out)) fail_predicate(what + " is finite in every dtype involved, but the output is not");
      break;
  }
}

// ---------------------------------------------------------------------------------------------
// Bounded claims: the tolerance rows of properties/tolerances.hpp. They bound the rounding of a
// computation of the configured kernel, dtype and schedule (B(G)); a faithful implementation
// performs the same rounded stages, so the same a-priori bound applies to it.

void orthogonal_equivariance(const KernelCheck& c) {
  const TestMatrix g = draw(any_matrix(c));
  const MatD u = *props::orthogonal_matrices(g.values.rows());
  const MatD v = *props::orthogonal_matrices(g.values.cols());
  const MatD rotated = u * g.values * v.transpose();
  const MatD plain = c.fn(g.values), of_rotated = c.fn(rotated);
  if (diverged_where_allowed(g.values, c.cfg, {&plain, &of_rotated})) return;
  const props::Tolerance& tol = props::tolerance(props::Claim::orthogonal_equivariance, c.cfg.kernel, c.cfg.dtype);
  assert_within("rel_diff(NS(U G V^T), U NS(G) V^T)", rel_diff(of_rotated, u * plain * v.transpose()),
                tol.bound(props::rounding_bound(g.values, c.cfg) + props::rounding_bound(rotated, c.cfg)),
                std::string(tol.derivation));
}

void permutation_equivariance(const KernelCheck& c) {
  const TestMatrix g = draw(any_matrix(c));
  const auto rows = *props::permutations(g.values.rows());
  const auto cols = *props::permutations(g.values.cols());
  const MatD input = permuted(g.values, rows, cols);
  const MatD plain = c.fn(g.values), actual = c.fn(input);
  if (diverged_where_allowed(g.values, c.cfg, {&plain, &actual})) return;
  const MatD expected = permuted(plain, rows, cols);
  RC_CLASSIFY(compare_bits(actual, expected, c.cfg.dtype).identical, "bit-identical");
  const props::Tolerance& tol = props::tolerance(props::Claim::permutation_equivariance, c.cfg.kernel, c.cfg.dtype);
  assert_within("rel_diff(NS(P G Q), P NS(G) Q)", rel_diff(actual, expected),
                tol.bound(props::rounding_bound(g.values, c.cfg) + props::rounding_bound(input, c.cfg)),
                std::string(tol.derivation));
}

void convergence_band(const KernelCheck& c) {
  const TestMatrix g = draw(any_matrix(c));
  const Eigen::VectorXd x = props::normalized_singular_values(g.values, c.cfg.eps);
  const props::Band band = props::convergence_band(x, c.cfg, g.shape.long_side(), g.shape.square());
  const MatD out = c.fn(g.values);
  if (diverged_where_allowed(g.values, c.cfg, {&out})) return;
  const Eigen::VectorXd sigma = props::accurate_singular_values(out);
  for (Eigen::Index i = 0; i < sigma.size(); ++i)
    if (!(sigma(i) >= band.lo && sigma(i) <= band.hi))
      fail_predicate("singular value " + std::to_string(i) + " = " + exact(sigma(i)) + " outside the band [" + exact(band.lo) +
                     ", " + exact(band.hi) + "] derived from the input's normalized singular values (oracle.hpp: "
                     "convergence_band, Weyl's inequality per step)");
}

// Agreement with the reference: the user's distance to the float64 map (the reference in fp64,
// the same kernel and schedule) against the reference's own distance to it. Derivation (the
// golden rows of tolerances.hpp, which bound DeepSpeed's own kernels the same way):
//   fp32: both are fp32 computations of one map with GEMMs summed in different orders, two
//     draws of one rounding-noise process, so their distances to the map are alike; bound
//     2 S, S the reference's own error. S is the largest of the reference's errors on G and on
//     two row/column permutations of G (NS is permutation-equivariant: equivalent evaluations
//     with other summation orders), so that it measures the kernel's error and not one lucky
//     draw (the S5 bound, sharding/allreduce_bound.hpp, makes S the same way).
//   bf16/fp16 with fp32 accumulation: 2 (u_dtype / u_fp32) S_fp32: only the rounding of each
//     stored result changes, and the first-order error is linear in the unit roundoff (row
//     golden_bf16; a single narrow-dtype draw is too noisy to scale by).
//   accumulation in the compute dtype: 2 S in that configuration (the fp32 argument, in the
//     configured dtype).
//   fp64: the own error against the float64 map is zero by definition, so the a-priori bound:
//     the user's and the reference's fp64 results are each within B(G) of the exact map, so
//     rel_diff(yours, reference) <= 2 B(G) (tolerances.hpp).
// Claimed for sides >= 8, as S5 claims it: below that a matrix's rounding error is a few dozen
// roundings whose size varies by more than 2x between equivalent evaluations.
void agreement_with_reference(const KernelCheck& c) {
  const Shape shape = *rc::gen::suchThat(any_shape(c), [](const Shape& s) { return s.short_side() >= 8; });
  const TestMatrix g = draw(props::matrices(rc::gen::just(shape)));
  const auto rows = *rc::gen::container<std::vector<std::vector<Eigen::Index>>>(2, props::permutations(shape.rows));
  const auto cols = *rc::gen::container<std::vector<std::vector<Eigen::Index>>>(2, props::permutations(shape.cols));
  const NsConfig& cfg = c.cfg;
  const MatD yours = c.fn(g.values);
  const MatD oracle = props::ns(g.values, props::oracle_config(cfg));
  if (is_zero(oracle)) {
    if (!is_zero(yours)) fail_bits("NS(G) and the reference's exact zero", yours, oracle, cfg.dtype);
    return;
  }
  const MatD ours = props::ns(g.values, cfg);
  if (diverged_where_allowed(g.values, cfg, {&yours, &ours})) return;
  if (cfg.dtype == DType::fp64) {
    assert_within("rel_diff(yours, reference) in fp64", rel_diff(yours, ours), 2 * props::rounding_bound(g.values, cfg),
                  "2 B(G): both fp64 results are within the a-priori rounding bound B(G) of the exact map "
                  "(tolerances.hpp); the float64 oracle has no error of its own to scale by");
    return;
  }
  const bool scaled_fp32 = cfg.dtype != DType::fp32 && cfg.accumulate == Accumulate::fp32;
  const NsConfig own_cfg = scaled_fp32 ? props::with_dtype(cfg, DType::fp32) : cfg;
  double s = props::own_error(g.values, own_cfg);
  for (int k = 0; k < 2; ++k) {
    const MatD gp = permuted(g.values, rows[k], cols[k]);
    s = std::max(s, rel_diff(props::ns(gp, own_cfg), permuted(oracle, rows[k], cols[k])));
  }
  const double factor = scaled_fp32 ? unit_roundoff(cfg.dtype) / unit_roundoff(DType::fp32) : 1.0;
  const props::Tolerance& tol = props::tolerance(scaled_fp32 ? props::Claim::golden_bf16 : props::Claim::golden_fp32, cfg.kernel,
                                                 scaled_fp32 ? DType::bf16 : DType::fp32);
  assert_within("rel_diff(yours, float64 map)", rel_diff(yours, oracle), tol.bound(0.0, factor * s),
                std::string(scaled_fp32 ? "2 (u_dtype / u_fp32) S_fp32" : "2 S") +
                    ", S = the reference's own error, max over G and two permutations of it; " + std::string(tol.derivation));
}

// ---------------------------------------------------------------------------------------------
// The table: one record per property (SPEC codes), the claim in the words a report prints.
// Why a property does not apply to a pinned shape ("" when it does).
const char* pinned_shape_excludes(const char* name, const Shape& s) {
  if (std::string(name) == "transpose_of_input_transposes_output_exactly" && s.square()) return "the shape is square";
  if (std::string(name) == "agrees_with_the_reference_within_its_own_error" && s.short_side() < 8)
    return "the bound is claimed for sides >= 8";
  return "";
}

struct KernelProperty {
  const char* code;
  const char* name;
  bool needs_batch;
  void (*body)(const KernelCheck&);
  const char* claim;
};

const KernelProperty kKernelProperties[] = {
    {"K1", "transpose_of_input_transposes_output_exactly", false, transpose, "NS(G^T) = NS(G)^T bit for bit (non-square G)"},
    {"K7", "batched_equals_loop_exactly", true, batched_equals_loop, "a 3-D batch gives each matrix's own bits"},
    {"K10", "repeated_calls_give_the_same_bits", false, repeated_calls, "the same input gives the same bits twice"},
    {"K10", "batch_position_does_not_change_the_bits", true, batch_position,
     "a matrix's bits do not depend on its batch position or neighbours"},
    {"K10", "memory_offset_does_not_change_the_bits", false, memory_offset,
     "a matrix's bits do not depend on where its buffer starts"},
    {"K2", "power_of_two_scaling_is_exact_when_eps_is_absorbed", false, power_of_two_scaling,
     "NS(2^k G) = NS(G) bit for bit where scaling is exact and eps is absorbed"},
    {"K3", "orthogonal_transformations_commute_within_rounding", false, orthogonal_equivariance,
     "NS(U G V^T) = U NS(G) V^T within B(G) + B(UGV^T)"},
    {"K4", "permutations_commute_within_rounding", false, permutation_equivariance, "NS(P G Q) = P NS(G) Q within B(G) + B(PGQ)"},
    {"K5", "singular_values_stay_in_the_band_of_the_scalar_map", false, convergence_band,
     "every singular value of NS(G) lies in the rounding-widened band of the scalar map"},
    {"K8", "zero_matrix_maps_to_zero", false, zero_matrix, "NS(0) = 0 exactly"},
    {"K8", "non_finite_input_gives_non_finite_output", false, non_finite_input, "a NaN or Inf in G gives a non-finite output"},
    {"K8", "extreme_magnitudes_are_exact_flagged_or_documented_zero", false, extreme_magnitudes,
     "tiny and huge magnitudes: exact, flagged non-finite, or the documented zero"},
    {"REF", "agrees_with_the_reference_within_its_own_error", false, agreement_with_reference,
     "distance to the float64 map within 2x the reference's own error (sides >= 8)"},
};

py::list kernel_property_table() {
  py::list out;
  for (const KernelProperty& p : kKernelProperties) {
    py::dict d;
    d["code"] = p.code;
    d["name"] = p.name;
    d["needs_batch"] = p.needs_batch;
    d["claim"] = p.claim;
    out.append(d);
  }
  return out;
}

py::list check_kernel(py::object fn, const NsConfig& cfg, bool batched, Eigen::Index max_dim, std::optional<Shape> shape,
                      const RunSettings& settings, const std::vector<std::string>& only, const std::string& replay) {
  if (max_dim < 8 || max_dim > 4096) throw InvalidField("max_dim", "must be between 8 and 4096, got " + std::to_string(max_dim));
  if (settings.max_success < 1) throw InvalidField("max_success", "must be at least 1, got " + std::to_string(settings.max_success));
  if (shape && (shape->rows < 1 || shape->cols < 1))
    throw InvalidField("shape", "must be two positive sides, got " + std::to_string(shape->rows) + "x" + std::to_string(shape->cols));
  const KernelCheck check{UserKernel(fn, cfg.steps, cfg.dtype == DType::fp64), cfg, max_dim, shape};
  const ReplayMap replays = replay.empty() ? ReplayMap{} : parse_replay(replay);
  auto selected = [&](const KernelProperty& p) {
    if (!replay.empty()) return replays.count(p.name) > 0;
    return only.empty() || std::find(only.begin(), only.end(), p.name) != only.end();
  };
  py::list out;
  for (const KernelProperty& p : kKernelProperties) {
    py::dict d;
    if (p.needs_batch && !batched) {
      d["status"] = "not applicable";
      d["message"] = "the kernel does not take 3-D batches (batched=False)";
    } else if (shape && *pinned_shape_excludes(p.name, *shape)) {
      d["status"] = "not applicable";
      d["message"] = pinned_shape_excludes(p.name, *shape);
    } else if (!selected(p)) {
      d["status"] = "not run";
    } else {
      PropertyOutcome o;
      {
        py::gil_scoped_release free;
        o = run_property(p.name, [&check, &p] { p.body(check); }, settings, replay.empty() ? nullptr : &replays);
      }
      d = to_python(o);
    }
    d["code"] = p.code;
    d["name"] = p.name;
    d["claim"] = p.claim;
    out.append(d);
  }
  return out;
}

}  // namespace

void bind_kernel_check(py::module_& m) {
  m.def("kernel_properties", &kernel_property_table, "The kernel properties: code, name, claim, needs_batch.");
  m.def(
      "check_kernel",
      [](py::object fn, const NsConfig& cfg, bool batched, Eigen::Index max_dim, std::optional<std::pair<Eigen::Index, Eigen::Index>> shape,
         std::uint64_t seed, int max_success, int max_size, const std::vector<std::string>& only, const std::string& replay) {
        std::optional<Shape> pinned;
        if (shape)
          pinned = Shape{shape->first, shape->second,
                         shape->first == shape->second ? props::ShapeKind::square
                         : shape->first < shape->second ? props::ShapeKind::wide
                                                        : props::ShapeKind::tall};
        return check_kernel(std::move(fn), cfg, batched, max_dim, pinned, RunSettings{seed, max_success, max_size}, only, replay);
      },
      py::arg("fn"), py::arg("config"), py::arg("batched"), py::arg("max_dim"), py::arg("shape"), py::arg("seed"), py::arg("max_success"),
      py::arg("max_size"), py::arg("properties"), py::arg("replay"));
}

}  // namespace nsv::python
