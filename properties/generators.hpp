#pragma once
// RapidCheck generators for the property catalogue (SPEC §4).
//
// Every random choice goes through rc::gen, so every generated value shrinks and replays from
// RapidCheck's seed. Nothing here calls std::rand, <random> or Eigen::Random.
//
// What the generators make:
//   dimension / shapes  square, wide, tall, extreme aspect, 1 x n, n x 1; dimensions biased to
//                       powers of two and attention head dims, but any length in [1, max] occurs
//   matrices            gaussian, low rank, power-law spectrum, ill-conditioned, integer-valued,
//                       scaled by a power of two; values are float32-representable (gradients
//                       are float32, and every compute dtype then starts from the same input)
//   floats<T>           IEEE values with validated knobs (NaN, Inf, subnormals, magnitude range)
//   dtypes, kernels, accumulation modes, coefficient schedules, step counts, whole NsConfigs
//
// Gaussian values come from one uniform integer each, mapped through the inverse normal CDF:
// an integer j in [-2^20, 2^20] becomes Phi^-1((j + 2^20 + 1/2) / (2^21 + 1)). The grid is fine
// (2^21 + 1 points) and covers |z| <= 4.9; j = 0 maps to exactly 0, so a shrinking integer shrinks
// the value towards 0 and a fully shrunk matrix is the zero matrix.
#include <rapidcheck.h>

#include <Eigen/Core>
#include <Eigen/QR>
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "nsv/coeffs.hpp"
#include "nsv/dtype.hpp"
#include "nsv/kernels.hpp"
#include "nsv/matrix.hpp"

namespace nsv::props {

// ----------------------------------------------------------------------------------------------
// Tier limits. The gate keeps matrices small (fast, 100 cases per property); the wide tier sets
// NSV_PROPS_MAX_DIM (and RC_PARAMS=max_success=...) in its environment.
inline int max_dim() {
  static const int value = [] {
    const char* env = std::getenv("NSV_PROPS_MAX_DIM");
    const int v = env ? std::atoi(env) : 48;
    if (v < 4 || v > 4096) throw std::invalid_argument("NSV_PROPS_MAX_DIM must be in [4, 4096]");
    return v;
  }();
  return value;
}

// ----------------------------------------------------------------------------------------------
// Scalars from integers.

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

// Standard normal values, one uniform integer each.
inline rc::Gen<std::vector<double>> gaussians(std::size_t count) {
  return rc::gen::map(
      rc::gen::container<std::vector<std::int64_t>>(count, centered_integer(kGaussianGridHalfWidth)),
      [](const std::vector<std::int64_t>& grid) {
        std::vector<double> z(grid.size());
        std::transform(grid.begin(), grid.end(), z.begin(), gaussian_from_grid);
        return z;
      });
}

// ----------------------------------------------------------------------------------------------
// floats<T>: IEEE values with knobs. The default is what Arbitrary<double> gives (finite,
// normal), but the knobs reach NaN, infinities and subnormals, which Arbitrary never makes.

template <class T>
struct FloatKnobs {
  bool allow_nan = false;
  bool allow_inf = false;
  bool allow_subnormal = false;
  T min_magnitude = 0;                               // 0 allows +-0
  T max_magnitude = std::numeric_limits<T>::max();   // finite; infinities come from allow_inf

  // Throws std::invalid_argument for knobs that contradict each other or cannot be met.
  void validate() const {
    using L = std::numeric_limits<T>;
    auto fail = [](const std::string& why) { throw std::invalid_argument("floats<T> knobs: " + why); };
    if (std::isnan(min_magnitude) || std::isnan(max_magnitude)) fail("magnitude bounds must not be NaN");
    if (min_magnitude < 0 || max_magnitude < 0) fail("magnitude bounds are magnitudes: they must be >= 0");
    if (std::isinf(max_magnitude) || std::isinf(min_magnitude))
      fail("magnitude bounds must be finite; use allow_inf for infinities");
    if (min_magnitude > max_magnitude) fail("min_magnitude > max_magnitude");
    const auto subnormal = [](T v) { return v > 0 && v < L::min(); };
    if (!allow_subnormal && (subnormal(min_magnitude) || subnormal(max_magnitude)))
      fail("a magnitude bound is subnormal but allow_subnormal is false");
    if (allow_subnormal && (min_magnitude >= L::min() || max_magnitude < L::denorm_min()))
      fail("allow_subnormal is true but [min_magnitude, max_magnitude] holds no subnormal");
  }
};

namespace detail {
template <class T>
using FloatBits = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
}  // namespace detail

template <class T>
rc::Gen<T> floats(FloatKnobs<T> knobs = {}) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "floats<T>: float or double");
  using L = std::numeric_limits<T>;
  using Bits = detail::FloatBits<T>;
  knobs.validate();
  // Magnitudes are drawn uniformly in bit-pattern space, i.e. roughly log-uniformly: every
  // exponent of the range is equally likely, which is what reaches rounding edge cases.
  const T lowest_drawn = knobs.allow_subnormal ? std::max(knobs.min_magnitude, L::denorm_min())
                                               : std::max(knobs.min_magnitude, L::min());
  const bool any_nonzero = knobs.max_magnitude >= lowest_drawn;  // else only 0 is in range
  const Bits lo = std::bit_cast<Bits>(lowest_drawn), hi = std::bit_cast<Bits>(std::max(knobs.max_magnitude, lowest_drawn));
  auto magnitude = rc::gen::map(rc::gen::inRange<Bits>(lo, hi + 1), [](Bits b) { return std::bit_cast<T>(b); });

  std::vector<T> specials;
  auto special_if = [&](T v) {
    if (v >= knobs.min_magnitude && v <= knobs.max_magnitude) specials.push_back(v);
  };
  special_if(T(0));
  special_if(T(1));
  special_if(L::min());
  special_if(knobs.max_magnitude);
  special_if(knobs.min_magnitude);
  if (knobs.allow_subnormal) {
    special_if(L::denorm_min());
    special_if(std::nextafter(L::min(), T(0)));  // the largest subnormal
  }
  auto sign = rc::gen::arbitrary<bool>();
  auto with_sign = [](std::pair<T, bool> p) { return p.second ? -p.first : p.first; };

  std::vector<std::pair<std::size_t, rc::Gen<T>>> choices;
  if (any_nonzero) choices.push_back({8, rc::gen::map(rc::gen::pair(magnitude, sign), with_sign)});
  choices.push_back({2, rc::gen::map(rc::gen::pair(rc::gen::elementOf(specials), sign), with_sign)});
  if (knobs.allow_nan)
    choices.push_back({1, rc::gen::element(L::quiet_NaN(), -L::quiet_NaN(), L::signaling_NaN())});
  if (knobs.allow_inf) choices.push_back({1, rc::gen::element(L::infinity(), -L::infinity())});
  // weightedOneOf takes an initializer_list; this list is built at run time, so pick by a
  // weighted index (shrinking towards 0, the ordinary values).
  std::size_t total = 0;
  for (const auto& c : choices) total += c.first;
  return rc::gen::mapcat(rc::gen::resize(100, rc::gen::inRange<std::size_t>(0, total)), [choices](std::size_t k) {
    for (const auto& [weight, gen] : choices) {
      if (k < weight) return gen;
      k -= weight;
    }
    return choices.back().second;
  });
}

// ----------------------------------------------------------------------------------------------
// Configuration pieces.

inline rc::Gen<DType> dtypes() { return rc::gen::element(DType::fp64, DType::fp32, DType::bf16, DType::fp16); }
inline rc::Gen<DType> narrow_dtypes() { return rc::gen::element(DType::fp32, DType::bf16, DType::fp16); }
inline rc::Gen<Kernel> kernels() { return rc::gen::element(Kernel::standard, Kernel::gram); }

// The accumulation mode that a dtype allows: fp64 always accumulates in fp64.
inline rc::Gen<Accumulate> accumulations(DType d) {
  if (d == DType::fp64) return rc::gen::just(Accumulate::fp32);
  return rc::gen::weightedElement<Accumulate>({{3, Accumulate::fp32}, {1, Accumulate::compute}});
}

// Both ways of computing the n x n products; the default (symmetric) drawn more often.
inline rc::Gen<Products> products() {
  return rc::gen::weightedElement<Products>({{3, Products::symmetric}, {1, Products::full}});
}

inline rc::Gen<CoeffSchedule> schedules() {
  return rc::gen::map(rc::gen::weightedElement<std::string>({{4, "keller"}, {1, "you"}, {1, "polar_express"}}),
                      [](const std::string& name) { return builtin_schedule(name); });
}

// Step counts biased to DeepSpeed's 5, with 0 (the normalization alone) and up to 10.
inline rc::Gen<int> step_counts() {
  return rc::gen::weightedOneOf<int>({{3, rc::gen::just(5)}, {2, rc::gen::inRange(0, 11)}});
}

// A whole kernel configuration; the fixed parts can be pinned by the caller afterwards.
inline rc::Gen<NsConfig> ns_configs() {
  return rc::gen::mapcat(rc::gen::tuple(kernels(), dtypes(), schedules(), step_counts(), products()), [](const auto& t) {
    const auto& [kernel, dtype, schedule, steps, how] = t;
    return rc::gen::map(accumulations(dtype), [=](Accumulate acc) {
      NsConfig cfg;
      cfg.kernel = kernel;
      cfg.dtype = dtype;
      cfg.accumulate = acc;
      cfg.products = how;
      cfg.coeffs = schedule;
      cfg.steps = steps;
      return cfg;
    });
  });
}

// ----------------------------------------------------------------------------------------------
// Shapes.

enum class ShapeKind { square, wide, tall, extreme_wide, extreme_tall, row_vector, column_vector };

inline const char* shape_kind_name(ShapeKind k) {
  switch (k) {
    case ShapeKind::square: return "square";
    case ShapeKind::wide: return "wide";
    case ShapeKind::tall: return "tall";
    case ShapeKind::extreme_wide: return "extreme_wide";
    case ShapeKind::extreme_tall: return "extreme_tall";
    case ShapeKind::row_vector: return "1xn";
    case ShapeKind::column_vector: return "nx1";
  }
  return "?";
}

struct Shape {
  Eigen::Index rows = 1, cols = 1;
  ShapeKind kind = ShapeKind::square;
  bool square() const { return rows == cols; }
  Eigen::Index short_side() const { return std::min(rows, cols); }
  Eigen::Index long_side() const { return std::max(rows, cols); }
};

inline void showValue(ShapeKind k, std::ostream& os) { os << shape_kind_name(k); }
inline void showValue(const Shape& s, std::ostream& os) { os << s.rows << "x" << s.cols << " (" << shape_kind_name(s.kind) << ")"; }

// A length in [1, max]: half the time a power of two or a head dimension (the shapes real
// models have), otherwise any length, so odd sizes and BLAS edge cases are covered too.
inline rc::Gen<Eigen::Index> dimensions(Eigen::Index max) {
  std::vector<Eigen::Index> special;
  for (Eigen::Index p = 1; p <= max; p *= 2) special.push_back(p);
  for (Eigen::Index h : {48, 80, 96, 112, 128, 160, 192, 256})  // head dims (64, 128 are powers)
    if (h <= max) special.push_back(h);
  return rc::gen::weightedOneOf<Eigen::Index>(
      {{1, rc::gen::elementOf(special)}, {1, rc::gen::inRange<Eigen::Index>(1, max + 1)}});
}

// Two different lengths in [1, max], the smaller first (max >= 2).
inline rc::Gen<std::pair<Eigen::Index, Eigen::Index>> distinct_sorted(Eigen::Index max) {
  return rc::gen::map(rc::gen::pair(dimensions(max), dimensions(max)), [max](std::pair<Eigen::Index, Eigen::Index> p) {
    auto [a, b] = p;
    if (a > b) std::swap(a, b);
    if (a == b) (b < max) ? ++b : --a;
    return std::pair{a, b};
  });
}

inline rc::Gen<Shape> shapes_of(ShapeKind kind, Eigen::Index max = max_dim()) {
  using P = std::pair<Eigen::Index, Eigen::Index>;
  switch (kind) {
    case ShapeKind::square:
      return rc::gen::map(dimensions(max), [](Eigen::Index n) { return Shape{n, n, ShapeKind::square}; });
    case ShapeKind::wide:
      return rc::gen::map(distinct_sorted(max), [](P p) { return Shape{p.first, p.second, ShapeKind::wide}; });
    case ShapeKind::tall:
      return rc::gen::map(distinct_sorted(max), [](P p) { return Shape{p.second, p.first, ShapeKind::tall}; });
    case ShapeKind::extreme_wide:
    case ShapeKind::extreme_tall:
      // short side 1..3, long side at least 8x it: the regime of per-head blocks of wide layers
      return rc::gen::map(rc::gen::pair(rc::gen::inRange<Eigen::Index>(1, 4), rc::gen::inRange<Eigen::Index>(std::min<Eigen::Index>(24, max), max + 1)),
                          [kind](P p) {
                            return kind == ShapeKind::extreme_wide ? Shape{p.first, p.second, kind}
                                                                   : Shape{p.second, p.first, kind};
                          });
    case ShapeKind::row_vector:
      return rc::gen::map(dimensions(max), [](Eigen::Index n) { return Shape{1, n, ShapeKind::row_vector}; });
    case ShapeKind::column_vector:
      return rc::gen::map(dimensions(max), [](Eigen::Index n) { return Shape{n, 1, ShapeKind::column_vector}; });
  }
  throw std::logic_error("unknown ShapeKind");
}

inline rc::Gen<Shape> shapes(Eigen::Index max = max_dim()) {
  return rc::gen::weightedOneOf<Shape>({{3, shapes_of(ShapeKind::square, max)},
                                        {4, shapes_of(ShapeKind::wide, max)},
                                        {4, shapes_of(ShapeKind::tall, max)},
                                        {1, shapes_of(ShapeKind::extreme_wide, max)},
                                        {1, shapes_of(ShapeKind::extreme_tall, max)},
                                        {1, shapes_of(ShapeKind::row_vector, max)},
                                        {1, shapes_of(ShapeKind::column_vector, max)}});
}

inline rc::Gen<Shape> non_square_shapes(Eigen::Index max = max_dim()) {
  return rc::gen::weightedOneOf<Shape>({{4, shapes_of(ShapeKind::wide, max)},
                                        {4, shapes_of(ShapeKind::tall, max)},
                                        {1, shapes_of(ShapeKind::extreme_wide, max)},
                                        {1, shapes_of(ShapeKind::extreme_tall, max)},
                                        {1, shapes_of(ShapeKind::row_vector, max)},
                                        {1, shapes_of(ShapeKind::column_vector, max)}});
}

// ----------------------------------------------------------------------------------------------
// Matrices with controlled spectra.

enum class SpectrumKind { gaussian, low_rank, power_law, ill_conditioned, integer_valued };

inline const char* spectrum_kind_name(SpectrumKind k) {
  switch (k) {
    case SpectrumKind::gaussian: return "gaussian";
    case SpectrumKind::low_rank: return "low_rank";
    case SpectrumKind::power_law: return "power_law";
    case SpectrumKind::ill_conditioned: return "ill_conditioned";
    case SpectrumKind::integer_valued: return "integer_valued";
  }
  return "?";
}

struct Spectrum {
  SpectrumKind kind = SpectrumKind::gaussian;
  int rank = 1;                 // low_rank: the rank (capped by the short side)
  double alpha = 1.0;           // power_law: sigma_i = (i+1)^-alpha
  double log10_condition = 3;   // ill_conditioned: sigma_i geometric from 1 to 10^-this
  int scale_exponent = 0;       // every kind: the matrix is multiplied by 2^scale_exponent
};

inline void showValue(const Spectrum& s, std::ostream& os) {
  os << spectrum_kind_name(s.kind);
  if (s.kind == SpectrumKind::low_rank) os << " rank " << s.rank;
  if (s.kind == SpectrumKind::power_law) os << " alpha " << s.alpha;
  if (s.kind == SpectrumKind::ill_conditioned) os << " cond 1e" << s.log10_condition;
  if (s.scale_exponent != 0) os << " x 2^" << s.scale_exponent;
}

// Moderate scales keep every value inside fp16's normal range before normalization (|z| <= 4.9
// times 2^4), so that every dtype and kernel represents the input; extreme magnitudes are the
// business of K8, which asks for them explicitly.
inline rc::Gen<int> moderate_scale_exponents() {
  return rc::gen::weightedOneOf<int>({{3, rc::gen::just(0)}, {1, rc::gen::map(centered_integer(4), [](std::int64_t e) { return static_cast<int>(e); })}});
}

inline rc::Gen<Spectrum> spectra(rc::Gen<int> scale_exponent = moderate_scale_exponents()) {
  auto kind = rc::gen::weightedElement<SpectrumKind>({{4, SpectrumKind::gaussian},
                                                      {2, SpectrumKind::low_rank},
                                                      {2, SpectrumKind::power_law},
                                                      {2, SpectrumKind::ill_conditioned},
                                                      {1, SpectrumKind::integer_valued}});
  return rc::gen::map(rc::gen::tuple(kind, rc::gen::inRange(1, 5), rc::gen::inRange(2, 31),
                                     rc::gen::inRange(1, 8), scale_exponent),
                      [](const std::tuple<SpectrumKind, int, int, int, int>& t) {
                        Spectrum s;
                        s.kind = std::get<0>(t);
                        s.rank = std::get<1>(t);
                        s.alpha = std::get<2>(t) / 10.0;  // 0.2 .. 3.0
                        s.log10_condition = std::get<3>(t);
                        s.scale_exponent = std::get<4>(t);
                        return s;
                      });
}

// A matrix, how it was made, and nothing else: the values are float32-representable doubles.
struct TestMatrix {
  Shape shape;
  Spectrum spectrum;
  MatD values;
};

inline void showValue(const TestMatrix& m, std::ostream& os) {
  os << "TestMatrix ";
  showValue(m.shape, os);
  os << ", ";
  showValue(m.spectrum, os);
  if (m.values.size() <= 16) {
    os << ", values (hexfloat, row-major):";
    for (Eigen::Index i = 0; i < m.values.size(); ++i) os << ' ' << std::hexfloat << m.values.data()[i];
    os << std::defaultfloat;
  }
}

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

inline std::size_t normals_needed(const Shape& s, const Spectrum& spec) {
  const auto m = static_cast<std::size_t>(s.rows), n = static_cast<std::size_t>(s.cols);
  const auto p = static_cast<std::size_t>(s.short_side());
  switch (spec.kind) {
    case SpectrumKind::gaussian: return m * n;
    case SpectrumKind::low_rank: {
      const auto r = std::min<std::size_t>(static_cast<std::size_t>(spec.rank), p);
      return (m + n) * r;
    }
    case SpectrumKind::power_law:
    case SpectrumKind::ill_conditioned: return (m + n) * p;
    case SpectrumKind::integer_valued: return 0;
  }
  return 0;
}

inline MatD to_float32_values(const MatD& m) { return m.cast<float>().cast<double>(); }

inline MatD build(const Shape& s, const Spectrum& spec, const std::vector<double>& z, const std::vector<std::int64_t>& ints) {
  NormalStream normals{z};
  const Eigen::Index m = s.rows, n = s.cols, p = s.short_side();
  MatD g;
  switch (spec.kind) {
    case SpectrumKind::gaussian: g = normals.matrix(m, n); break;
    case SpectrumKind::low_rank: {
      const Eigen::Index r = std::min<Eigen::Index>(spec.rank, p);
      const MatD left = normals.matrix(m, r), right = normals.matrix(r, n);
      g = (left * right) / std::sqrt(static_cast<double>(r));
      break;
    }
    case SpectrumKind::power_law:
    case SpectrumKind::ill_conditioned: {
      const MatD u = orthonormal_columns(normals.matrix(m, p)), v = orthonormal_columns(normals.matrix(n, p));
      Eigen::VectorXd sigma(p);
      for (Eigen::Index i = 0; i < p; ++i)
        sigma(i) = spec.kind == SpectrumKind::power_law
                       ? std::pow(static_cast<double>(i + 1), -spec.alpha)
                       : std::pow(10.0, -spec.log10_condition * (p == 1 ? 0.0 : static_cast<double>(i) / static_cast<double>(p - 1)));
      // scaled so that typical entries are O(1), like the other kinds
      g = u * sigma.asDiagonal() * v.transpose() * std::sqrt(static_cast<double>(std::max(m, n)));
      break;
    }
    case SpectrumKind::integer_valued: {
      g.resize(m, n);
      for (Eigen::Index i = 0; i < g.size(); ++i) g.data()[i] = static_cast<double>(ints.at(static_cast<std::size_t>(i)));
      break;
    }
  }
  // Round to float32 first, then scale by a power of two: the scaling is exact, so the scaled
  // matrix is float32-representable whenever its values stay in float32's normal range.
  return to_float32_values(g) * std::ldexp(1.0, spec.scale_exponent);
}

}  // namespace detail

inline rc::Gen<TestMatrix> matrices_of(Shape shape, Spectrum spec) {
  const std::size_t normals = detail::normals_needed(shape, spec);
  const std::size_t ints = spec.kind == SpectrumKind::integer_valued ? static_cast<std::size_t>(shape.rows * shape.cols) : 0;
  return rc::gen::map(
      rc::gen::pair(gaussians(normals), rc::gen::container<std::vector<std::int64_t>>(ints, centered_integer(8))),
      [shape, spec](const std::pair<std::vector<double>, std::vector<std::int64_t>>& raw) {
        return TestMatrix{shape, spec, detail::build(shape, spec, raw.first, raw.second)};
      });
}

inline rc::Gen<TestMatrix> matrices(rc::Gen<Shape> shape_gen = shapes(), rc::Gen<Spectrum> spectrum_gen = spectra()) {
  return rc::gen::mapcat(rc::gen::pair(shape_gen, spectrum_gen), [](const std::pair<Shape, Spectrum>& p) {
    return matrices_of(p.first, p.second);
  });
}

inline rc::Gen<TestMatrix> gaussian_matrices(rc::Gen<Shape> shape_gen = shapes()) {
  return matrices(shape_gen, rc::gen::just(Spectrum{}));
}

// Batches of independent matrices: all of one shape (per-head NS batches heads this way) or of
// assorted shapes (the backend accepts any list).
inline rc::Gen<std::vector<TestMatrix>> matrix_batches(int min_count, int max_count) {
  return rc::gen::mapcat(rc::gen::pair(rc::gen::inRange(min_count, max_count + 1), rc::gen::arbitrary<bool>()),
                         [](const std::pair<int, bool>& p) {
                           const auto count = static_cast<std::size_t>(p.first);
                           if (p.second)
                             return rc::gen::mapcat(shapes(), [count](const Shape& s) {
                               return rc::gen::container<std::vector<TestMatrix>>(count, matrices(rc::gen::just(s)));
                             });
                           return rc::gen::container<std::vector<TestMatrix>>(count, matrices());
                         });
}

inline Batch values_of(const std::vector<TestMatrix>& ms) {
  Batch b;
  for (const auto& m : ms) b.push_back(m.values);
  return b;
}

// A Haar-random n x n orthogonal matrix (QR of a gaussian matrix, R's signs folded in).
inline rc::Gen<MatD> orthogonal_matrices(Eigen::Index n) {
  return rc::gen::map(gaussians(static_cast<std::size_t>(n * n)), [n](const std::vector<double>& z) {
    detail::NormalStream normals{z};
    return detail::orthonormal_columns(normals.matrix(n, n));
  });
}

// A permutation of 0..n-1 (Fisher-Yates driven by generated integers).
inline rc::Gen<std::vector<Eigen::Index>> permutations(Eigen::Index n) {
  return rc::gen::map(rc::gen::container<std::vector<std::int64_t>>(static_cast<std::size_t>(n), rc::gen::resize(100, rc::gen::inRange<std::int64_t>(0, std::int64_t{1} << 30))),
                      [n](const std::vector<std::int64_t>& r) {
                        std::vector<Eigen::Index> perm(static_cast<std::size_t>(n));
                        for (Eigen::Index i = 0; i < n; ++i) perm[static_cast<std::size_t>(i)] = i;
                        for (Eigen::Index i = n - 1; i > 0; --i)
                          std::swap(perm[static_cast<std::size_t>(i)], perm[static_cast<std::size_t>(r[static_cast<std::size_t>(i)] % (i + 1))]);
                        return perm;
                      });
}

// ----------------------------------------------------------------------------------------------
// Drawing outside a property (quantified measurements in plain Boost tests): the value of `gen`
// at `size` for RapidCheck's Random(seed). Deterministic, still all randomness from rc::gen.
template <class T>
T sample(const rc::Gen<T>& gen, std::uint64_t seed, int size = 100) {
  return gen(rc::Random(seed), size).value();
}

}  // namespace nsv::props

// ----------------------------------------------------------------------------------------------
// Arbitrary specialisations where a type has one natural distribution.
namespace rc {

template <>
struct Arbitrary<nsv::DType> {
  static Gen<nsv::DType> arbitrary() { return nsv::props::dtypes(); }
};
template <>
struct Arbitrary<nsv::Kernel> {
  static Gen<nsv::Kernel> arbitrary() { return nsv::props::kernels(); }
};
template <>
struct Arbitrary<nsv::props::Shape> {
  static Gen<nsv::props::Shape> arbitrary() { return nsv::props::shapes(); }
};
template <>
struct Arbitrary<nsv::props::TestMatrix> {
  static Gen<nsv::props::TestMatrix> arbitrary() { return nsv::props::matrices(); }
};
template <>
struct Arbitrary<nsv::NsConfig> {
  static Gen<nsv::NsConfig> arbitrary() { return nsv::props::ns_configs(); }
};

}  // namespace rc

// Printing of library types in counterexamples (found by argument-dependent lookup).
namespace nsv {
inline void showValue(DType d, std::ostream& os) { os << dtype_name(d); }
inline void showValue(Kernel k, std::ostream& os) { os << kernel_name(k); }
inline void showValue(Accumulate a, std::ostream& os) { os << "accumulate=" << accumulate_name(a); }
inline void showValue(const NsConfig& c, std::ostream& os) {
  os << kernel_name(c.kernel) << ' ' << dtype_name(c.dtype) << " accumulate=" << accumulate_name(c.accumulate)
     << " products=" << products_name(c.products) << ' ' << c.coeffs.name << " steps=" << c.steps;
}
}  // namespace nsv
