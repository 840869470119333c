// The generators every property draws from: floats, normals, shapes, matrices with their
// spectra, structured orthogonal transforms.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <cstdint>
#include <omp.h>

#include "check.hpp"
#include "foundation/float_values.hpp"
#include "generators/configs.hpp"
#include "generators/floats.hpp"
#include "generators/matrices.hpp"
#include "generators/normals.hpp"
#include "generators/shapes.hpp"
#include "generators/tiers.hpp"
#include "generators/transforms.hpp"
#include "spectra.hpp"

namespace nsv::checks {

BOOST_AUTO_TEST_SUITE(foundation)

BOOST_AUTO_TEST_SUITE(generators)

// [exact] floats<T> honours its knobs: no NaN, Inf or subnormal unless allowed, finite values in
// [min_magnitude, max_magnitude]; knobs that contradict each other throw (from validate() and
// from floats()).
NSV_PROPERTY(floats_honour_their_knobs_or_refuse_contradictions, ()) {
  FloatKnobs<double> k;
  k.allow_nan = *rc::gen::arbitrary<bool>();
  k.allow_inf = *rc::gen::arbitrary<bool>();
  k.allow_subnormal = *rc::gen::arbitrary<bool>();
  const std::vector<double> bounds{0.0, 0x1p-1074, 1e-310, 1e-300, 1e-3, 1.0, 1e10, std::numeric_limits<double>::max()};
  k.min_magnitude = *rc::gen::elementOf(bounds);
  k.max_magnitude = *rc::gen::elementOf(bounds);
  bool valid = true;
  try {
    k.validate();
  } catch (const std::invalid_argument&) {
    valid = false;
  }
  RC_CLASSIFY(valid, "valid knobs");
  if (!valid) {
    RC_ASSERT_THROWS_AS(floats<double>(k), std::invalid_argument);
    return;
  }
  const auto gen = floats<double>(k);
  for (int i = 0; i < 20; ++i) {
    const double v = *gen;
    if (std::isnan(v)) {
      RC_ASSERT(k.allow_nan);
      continue;
    }
    if (std::isinf(v)) {
      RC_ASSERT(k.allow_inf);
      continue;
    }
    RC_ASSERT(std::abs(v) >= k.min_magnitude);
    RC_ASSERT(std::abs(v) <= k.max_magnitude);
    RC_ASSERT(k.allow_subnormal || std::abs(v) == 0.0 || std::abs(v) >= std::numeric_limits<double>::min());
  }
}

BOOST_AUTO_TEST_CASE(contradictory_float_knobs_throw) {
  auto knobs = [](auto edit) {
    FloatKnobs<float> k;
    edit(k);
    return k;
  };
  using K = FloatKnobs<float>;
  const float fmin = std::numeric_limits<float>::min();
  BOOST_CHECK_THROW(floats<float>(knobs([](K& k) { k.min_magnitude = 2, k.max_magnitude = 1; })), std::invalid_argument);
  BOOST_CHECK_THROW(floats<float>(knobs([](K& k) { k.min_magnitude = -1; })), std::invalid_argument);
  BOOST_CHECK_THROW(floats<float>(knobs([](K& k) { k.max_magnitude = std::nanf(""); })), std::invalid_argument);
  BOOST_CHECK_THROW(floats<float>(knobs([](K& k) { k.max_magnitude = INFINITY; })), std::invalid_argument);
  BOOST_CHECK_THROW(floats<float>(knobs([&](K& k) { k.min_magnitude = fmin / 4; })), std::invalid_argument);
  BOOST_CHECK_THROW(floats<float>(knobs([&](K& k) { k.allow_subnormal = true, k.min_magnitude = 1; })), std::invalid_argument);
  BOOST_CHECK_NO_THROW(floats<float>(knobs([&](K& k) { k.allow_subnormal = true, k.max_magnitude = fmin; })));
}

// [quantified] With every knob open, 400 draws reach each kind of IEEE value.
BOOST_AUTO_TEST_CASE(open_knobs_reach_every_kind_of_value) {
  ++tally().quantified;
  int nan = 0, pos_inf = 0, neg_inf = 0, subnormal = 0, zero = 0, normal = 0, one = 0, smallest_normal = 0, largest = 0;
  const auto gen = floats<float>(every_float());
  for (int seed = 0; seed < 400; ++seed) {
    const float v = sample(gen, seed);
    nan += std::isnan(v);
    pos_inf += v == INFINITY;
    neg_inf += v == -INFINITY;
    subnormal += std::fpclassify(v) == FP_SUBNORMAL;
    zero += v == 0.0f;
    normal += std::isnormal(v);
    // the special values floats() names, each reached
    one += std::abs(v) == 1.0f;
    smallest_normal += std::abs(v) == std::numeric_limits<float>::min();
    largest += std::abs(v) == std::numeric_limits<float>::max();
  }
  BOOST_TEST_MESSAGE("floats<float>, every knob open, 400 draws: NaN " << nan << ", +Inf " << pos_inf << ", -Inf " << neg_inf
                                                                        << ", subnormal " << subnormal << ", zero " << zero
                                                                        << ", normal " << normal << ", +-1 " << one
                                                                        << ", +-smallest normal " << smallest_normal
                                                                        << ", +-largest finite " << largest);
  for (const int count : {nan, pos_inf, neg_inf, subnormal, zero, normal, one, smallest_normal, largest}) BOOST_CHECK_GT(count, 0);
}

// 20000 values with mean 0 +- 0.03 and variance 1 +- 0.05 (5 standard errors).
void looks_standard_normal(const std::vector<double>& z, const char* what) {
  double mean = 0, var = 0;
  for (double v : z) mean += v;
  mean /= static_cast<double>(z.size());
  for (double v : z) var += (v - mean) * (v - mean);
  var /= static_cast<double>(z.size() - 1);
  BOOST_TEST_MESSAGE(z.size() << " " << what << ": mean " << mean << ", variance " << var);
  BOOST_CHECK_SMALL(mean, 0.03);
  BOOST_CHECK_SMALL(var - 1.0, 0.05);
}

// [bounded] The gaussian grid: the inverse CDF inverts the CDF to 1e-13 relative, and 20000
// draws have mean 0 +- 0.03 and variance 1 +- 0.05 (5 standard errors).
BOOST_AUTO_TEST_CASE(gaussian_values_are_standard_normal) {
  ++tally().quantified;
  for (const double p : {1e-7, 1e-3, 0.02425, 0.2, 0.5, 0.8, 0.97575, 1 - 1e-7}) {
    const double back = 0.5 * std::erfc(-inverse_normal_cdf(p) / std::sqrt(2.0));
    BOOST_CHECK_SMALL((back - p) / std::min(p, 1 - p), 1e-13);
  }
  BOOST_CHECK_EQUAL(gaussian_from_grid(0), 0.0);
  looks_standard_normal(sample(gaussians(20000), 1), "gaussian draws");
}

// [exact] Shapes are what their kind says, within [1, max].
NSV_PROPERTY(shapes_match_their_kind, ()) {
  const Shape s = *shapes();
  RC_ASSERT(s.rows >= 1 && s.cols >= 1 && s.rows <= max_dim() && s.cols <= max_dim());
  switch (s.kind) {
    case ShapeKind::square: RC_ASSERT(s.rows == s.cols); break;
    case ShapeKind::wide: RC_ASSERT(s.rows < s.cols); break;
    case ShapeKind::tall: RC_ASSERT(s.rows > s.cols); break;
    case ShapeKind::extreme_wide: RC_ASSERT(s.rows <= 3 && s.cols >= 8 * s.rows); break;
    case ShapeKind::extreme_tall: RC_ASSERT(s.cols <= 3 && s.rows >= 8 * s.cols); break;
    case ShapeKind::row_vector: RC_ASSERT(s.rows == 1); break;
    case ShapeKind::column_vector: RC_ASSERT(s.cols == 1); break;
  }
  RC_TAG(shape_kind_name(s.kind));
}

// [bounded] Matrices have the spectra they are made for. Values are float32 (exactly);
// integer-valued ones are integers in [-8, 8] times 2^scale; a rank-r matrix has r singular
// values above the float32 rounding floor (sqrt(mn) u32 of the largest); power-law and
// ill-conditioned ones have sigma_i / sigma_0 as designed, to 1e-3 relative where sigma_i is
// above 1e3 times that floor.
void has_its_spectrum(const TestMatrix& m) {
  const MatD& g = m.values;
  RC_TAG(spectrum_kind_name(m.spectrum.kind));
  for (Eigen::Index i = 0; i < g.size(); ++i) RC_ASSERT(static_cast<double>(static_cast<float>(g.data()[i])) == g.data()[i]);
  if (m.spectrum.kind == Spectrum::Kind::integer_valued) {
    const double unit = std::ldexp(1.0, m.spectrum.scale_exponent);
    for (Eigen::Index i = 0; i < g.size(); ++i) {
      const double k = g.data()[i] / unit;
      RC_ASSERT(k == std::round(k) && std::abs(k) <= 8);
    }
    return;
  }
  if (g.size() == 0) return;
  const Eigen::VectorXd s = singular_values(g);  // float64: the checks below are to 1e-3 and 4x a float32 floor
  if (s(0) == 0) return;
  const double floor = std::sqrt(static_cast<double>(g.size())) * unit_roundoff(DType::fp32) * s(0);
  const Eigen::Index p = s.size();
  switch (m.spectrum.kind) {
    case Spectrum::Kind::lowrank: {
      const Eigen::Index r = std::min<Eigen::Index>(m.spectrum.rank, p);
      for (Eigen::Index i = r; i < p; ++i) RC_ASSERT(s(i) <= 4 * floor);
      break;
    }
    case Spectrum::Kind::powerlaw:
    case Spectrum::Kind::ill_conditioned:
      for (Eigen::Index i = 0; i < p; ++i) {
        const double designed = m.spectrum.kind == Spectrum::Kind::powerlaw
                                    ? std::pow(static_cast<double>(i + 1), -m.spectrum.alpha)
                                    : std::pow(10.0, -m.spectrum.log10_condition * (p == 1 ? 0.0 : static_cast<double>(i) / static_cast<double>(p - 1)));
        if (designed * s(0) > 1e3 * floor) RC_ASSERT(std::abs(s(i) / s(0) - designed) <= 1e-3 * designed);
      }
      break;
    default: break;
  }
}

NSV_PROPERTY(matrices_have_their_spectrum, ()) { has_its_spectrum(*matrices()); }

// [exact + bounded] Above kElementShrinkingMaxElements a matrix is its structure plus a seed
// (seeded_matrices.hpp): it has its spectrum as above, carries its seed, and its values depend
// on the seed alone: the same bits on 1 thread as on the default count, other bits for another
// seed.
NSV_PROPERTY(seeded_matrices_have_their_spectrum_and_their_seeds_bits, ()) {
  const Eigen::Index rows = *rc::gen::inRange<Eigen::Index>(129, 200), cols = *rc::gen::inRange<Eigen::Index>(129, 200);
  const TestMatrix m = *matrices(rc::gen::just(Shape{rows, cols, rows == cols ? ShapeKind::square : ShapeKind::wide}));
  RC_ASSERT(m.seed.has_value());
  has_its_spectrum(m);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const MatD again = detail::finished(seeded::values(m.shape, m.spectrum, *m.seed), m.spectrum);
  omp_set_num_threads(threads);
  RC_ASSERT(compare_bits(again, m.values, DType::fp64).identical);
  if (m.spectrum.kind != Spectrum::Kind::integer_valued || m.values.size() > 64)
    RC_ASSERT(!compare_bits(detail::finished(seeded::values(m.shape, m.spectrum, *m.seed + 1), m.spectrum), m.values,
                            DType::fp64).identical);
}

// [exact + bounded] The structured orthogonal transforms (structured_orthogonal.hpp) K3 rotates
// with and the seeded generator builds singular vectors with, Q a and a Q^T, at sizes where their
// loops run in parallel (512 x 512 and up): the same bits on one thread as on the default count
// (the order of their loops is fixed by the shape; negative control: one sign flipped changes the
// bits), and within their derived rounding k (4n + 7) u of the same transform applied in long
// double (whose own k (4n + 7) u_ld is added). The columns of Q a (the rows of a Q^T) are computed
// independently, so the long double comparison takes 8 of them, for speed.
NSV_PROPERTY(structured_orthogonal_transforms_have_fixed_bits_and_their_rounding, ()) {
  const Eigen::Index rows = *rc::gen::inRange<Eigen::Index>(512, 530), cols = *rc::gen::inRange<Eigen::Index>(512, 530);
  const StructuredOrthogonal left = *structured_orthogonals(rows), right = *structured_orthogonals(cols);
  const MatD a = seeded::normal_matrix(*rc::gen::arbitrary<std::uint64_t>(), 0, rows, cols);
  const MatD from_left = left.times(a), from_right = right.times_from_the_right_transposed(a);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const MatD from_left_alone = left.times(a), from_right_alone = right.times_from_the_right_transposed(a);
  omp_set_num_threads(threads);
  RC_ASSERT(compare_bits(from_left, from_left_alone, DType::fp64).identical);
  RC_ASSERT(compare_bits(from_right, from_right_alone, DType::fp64).identical);
  StructuredOrthogonal flipped = left;
  flipped.signs[0] = -flipped.signs[0];
  RC_ASSERT(!compare_bits(flipped.times(a), from_left, DType::fp64).identical);
  using MatLD = Mat<long double>;
  const auto within_rounding = [](const MatD& computed, const MatLD& exact, const StructuredOrthogonal& q) {
    const double error = static_cast<double>((computed.cast<long double>() - exact).norm() / exact.norm());
    return error <= q.rounding() * (1 + 0x1p-64 / unit_roundoff(DType::fp64));
  };
  const MatLD columns = a.leftCols(8).cast<long double>(), rows_of_a = a.topRows(8).cast<long double>();
  RC_ASSERT(within_rounding(from_left.leftCols(8), left.times(columns), left));
  RC_ASSERT(within_rounding(from_right.topRows(8), right.times_from_the_right_transposed(rows_of_a), right));
}

// [bounded] The seeded normals (Philox and Box-Muller), as the grid's above.
BOOST_AUTO_TEST_CASE(seeded_values_are_standard_normal) {
  ++tally().quantified;
  looks_standard_normal(seeded::normals(20260412, 0, 20000), "seeded gaussian values");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()

}  // namespace nsv::checks
