#pragma once
// Matrices with controlled spectra: gaussian, low rank, power-law spectrum, ill-conditioned,
// integer-valued, scaled by a power of two (nsv::Spectrum, the library's description of a test
// matrix, drawn here from RapidCheck's values instead of a seed, so that a matrix shrinks). The
// values are float32-representable (gradients are float32, and every compute dtype then starts
// from the same input).
// Above kElementShrinkingMaxElements elements a matrix is its structure plus a seed instead
// (seeded_matrices.hpp, where the switch is explained).
#include <rapidcheck.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <tuple>
#include <utility>
#include <vector>

#include "generators/normals.hpp"
#include "generators/seeded_matrices.hpp"
#include "generators/shapes.hpp"
#include "nsv/kernels.hpp"
#include "nsv/matrix.hpp"
#include "nsv/spectra.hpp"

namespace nsv {
inline void showValue(const Spectrum& s, std::ostream& os) { os << s.text(); }
}  // namespace nsv

namespace nsv::checks {

// Moderate scales keep every value inside fp16's normal range before normalization (|z| <= 4.9
// times 2^4), so that every dtype and kernel represents the input; extreme magnitudes are the
// business of K8, which asks for them explicitly.
// The spectra's rules, in one place (the Hypothesis strategies read them through the Python module):
// a scale of 2^0 kUnscaledWeight times in kUnscaledWeight + 1, else 2^e with |e| <= kMaxScaleExponent;
// each kind's weight; rank 1..kMaxRank, alpha in tenths from kAlphaTenths, condition 10^1..10^kMaxLog10Condition;
// an integer matrix's entries in [-kMaxIntegerEntry, kMaxIntegerEntry].
inline constexpr std::size_t kUnscaledWeight = 3;
inline constexpr int kMaxScaleExponent = 4, kMaxRank = 4, kMaxLog10Condition = 7;
inline constexpr std::pair<int, int> kAlphaTenths{2, 30};
inline constexpr std::int64_t kMaxIntegerEntry = 8;
inline constexpr std::pair<Spectrum::Kind, std::size_t> kSpectrumWeights[] = {
    {Spectrum::Kind::gaussian, 4}, {Spectrum::Kind::lowrank, 2}, {Spectrum::Kind::powerlaw, 2},
    {Spectrum::Kind::ill_conditioned, 2}, {Spectrum::Kind::integer_valued, 1}};

inline rc::Gen<int> moderate_scale_exponents() {
  return rc::gen::weightedOneOf<int>({{kUnscaledWeight, rc::gen::just(0)},
                                      {1, rc::gen::map(centered_integer(kMaxScaleExponent), [](std::int64_t e) { return static_cast<int>(e); })}});
}

// Every kind but file, with its parameters: rank 1..4, alpha 0.2..3.0, condition 1e1..1e7.
inline rc::Gen<Spectrum> spectra(rc::Gen<int> scale_exponent = moderate_scale_exponents()) {
  using Kind = Spectrum::Kind;
  const auto weighted = [](Kind k) {
    for (const auto& [kind, weight] : kSpectrumWeights)
      if (kind == k) return std::pair{weight, k};
    return std::pair{std::size_t{0}, k};
  };
  auto kind = rc::gen::weightedElement<Kind>({weighted(Kind::gaussian), weighted(Kind::lowrank), weighted(Kind::powerlaw),
                                              weighted(Kind::ill_conditioned), weighted(Kind::integer_valued)});
  return rc::gen::map(rc::gen::tuple(kind, rc::gen::inRange(1, kMaxRank + 1), rc::gen::inRange(kAlphaTenths.first, kAlphaTenths.second + 1),
                                     rc::gen::inRange(1, kMaxLog10Condition + 1), scale_exponent),
                      [](const std::tuple<Kind, int, int, int, int>& t) {
                        Spectrum s;
                        s.kind = std::get<0>(t);
                        s.rank = std::get<1>(t);
                        s.alpha = std::get<2>(t) / 10.0;  // tenths
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
  std::optional<std::uint64_t> seed;  // a matrix above kElementShrinkingMaxElements: its seed (seeded_matrices.hpp)
};

// A counterexample prints its values exactly up to this many elements (e.g. 128 x 2); a larger
// one prints its shape and spectrum, and its replay line (check.hpp) regenerates its values.
inline constexpr Eigen::Index kPrintedElements = 256;

inline void showValue(const TestMatrix& m, std::ostream& os) {
  os << "TestMatrix ";
  showValue(m.shape, os);
  os << ", ";
  showValue(m.spectrum, os);
  if (m.seed) os << ", seed 0x" << std::hex << *m.seed << std::dec;
  if (m.values.size() <= kPrintedElements) {
    os << ", values (hexfloat, row-major):";
    for (Eigen::Index i = 0; i < m.values.size(); ++i) os << ' ' << std::hexfloat << m.values.data()[i];
    os << std::defaultfloat;
  }
}

namespace detail {

inline std::size_t normals_needed(const Shape& s, const Spectrum& spec) {
  const auto m = static_cast<std::size_t>(s.rows), n = static_cast<std::size_t>(s.cols);
  const auto p = static_cast<std::size_t>(s.short_side());
  switch (spec.kind) {
    case Spectrum::Kind::gaussian: return m * n;
    case Spectrum::Kind::lowrank: {
      const auto r = std::min<std::size_t>(static_cast<std::size_t>(spec.rank), p);
      return (m + n) * r;
    }
    case Spectrum::Kind::powerlaw:
    case Spectrum::Kind::ill_conditioned: return (m + n) * p;
    case Spectrum::Kind::integer_valued:
    case Spectrum::Kind::file: return 0;
  }
  return 0;
}

// Round to float32 first, then scale by a power of two: the scaling is exact, so the scaled
// matrix is float32-representable whenever its values stay in float32's normal range. In place:
// a fresh 4096 x 14336 matrix costs a page fault per 4 KiB.
inline MatD finished(MatD g, const Spectrum& spec) {
  const double scale = std::ldexp(1.0, spec.scale_exponent);
  g = g.cast<float>().cast<double>() * scale;
  return g;
}

inline MatD build(const Shape& s, const Spectrum& spec, const std::vector<double>& z, const std::vector<std::int64_t>& ints) {
  NormalStream normals{z};
  const Eigen::Index m = s.rows, n = s.cols, p = s.short_side();
  MatD g;
  switch (spec.kind) {
    case Spectrum::Kind::gaussian: g = normals.matrix(m, n); break;
    case Spectrum::Kind::lowrank: {
      const Eigen::Index r = std::min<Eigen::Index>(spec.rank, p);
      const MatD left = normals.matrix(m, r), right = normals.matrix(r, n);
      g = (left * right) / std::sqrt(static_cast<double>(r));
      break;
    }
    case Spectrum::Kind::powerlaw:
    case Spectrum::Kind::ill_conditioned: {
      const MatD u = orthonormal_columns(normals.matrix(m, p)), v = orthonormal_columns(normals.matrix(n, p));
      // scaled so that typical entries are O(1), like the other kinds
      g = u * designed_singular_values(spec, p).asDiagonal() * v.transpose() * std::sqrt(static_cast<double>(std::max(m, n)));
      break;
    }
    case Spectrum::Kind::integer_valued: {
      g.resize(m, n);
      for (Eigen::Index i = 0; i < g.size(); ++i) g.data()[i] = static_cast<double>(ints.at(static_cast<std::size_t>(i)));
      break;
    }
    case Spectrum::Kind::file: throw std::invalid_argument("the property generators draw no file spectrum");
  }
  return finished(std::move(g), spec);
}

}  // namespace detail

// What a matrix of at most kElementShrinkingMaxElements elements is drawn from: the grid points of its
// normals and its integers (an integer_valued one's entries). The Hypothesis strategies draw the same
// and build the matrix with matrix_of_draws, so that the same draws give the same matrix.
struct MatrixDraws {
  std::vector<std::int64_t> grid, integers;
};
inline rc::Gen<MatrixDraws> matrix_draws(const Shape& shape, const Spectrum& spec) {
  const std::size_t normals = detail::normals_needed(shape, spec);
  const std::size_t ints = spec.kind == Spectrum::Kind::integer_valued ? static_cast<std::size_t>(shape.rows * shape.cols) : 0;
  return rc::gen::map(rc::gen::pair(gaussian_grid(normals), rc::gen::container<std::vector<std::int64_t>>(ints, centered_integer(kMaxIntegerEntry))),
                      [](std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> d) {
                        return MatrixDraws{std::move(d.first), std::move(d.second)};
                      });
}
inline MatD matrix_of_draws(const Shape& shape, const Spectrum& spec, const MatrixDraws& d) {
  return detail::build(shape, spec, gaussians_of(d.grid), d.integers);
}

inline rc::Gen<TestMatrix> matrices_of(Shape shape, Spectrum spec) {
  if (shape.rows * shape.cols > kElementShrinkingMaxElements)
    // the full 64-bit range at every RapidCheck size (resize, as centered_integer does), without shrinking
    return rc::gen::map(rc::gen::noShrink(rc::gen::resize(100, rc::gen::arbitrary<std::uint64_t>())), [shape, spec](std::uint64_t seed) {
      return TestMatrix{shape, spec, detail::finished(seeded::values(shape, spec, seed), spec), seed};
    });
  return rc::gen::map(matrix_draws(shape, spec), [shape, spec](const MatrixDraws& d) {
    return TestMatrix{shape, spec, matrix_of_draws(shape, spec, d), std::nullopt};
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
inline rc::Gen<std::vector<TestMatrix>> matrix_batches(int min_count, int max_count, rc::Gen<Shape> shape_gen = shapes()) {
  return rc::gen::mapcat(rc::gen::pair(rc::gen::inRange(min_count, max_count + 1), rc::gen::arbitrary<bool>()),
                         [shape_gen](const std::pair<int, bool>& p) {
                           const auto count = static_cast<std::size_t>(p.first);
                           if (p.second)
                             return rc::gen::mapcat(shape_gen, [count](const Shape& s) {
                               return rc::gen::container<std::vector<TestMatrix>>(count, matrices(rc::gen::just(s)));
                             });
                           return rc::gen::container<std::vector<TestMatrix>>(count, matrices(shape_gen));
                         });
}

inline Batch values_of(const std::vector<TestMatrix>& ms) {
  Batch b;
  for (const auto& m : ms) b.push_back(m.values);
  return b;
}

}  // namespace nsv::checks

namespace rc {
template <>
struct Arbitrary<nsv::checks::TestMatrix> {
  static Gen<nsv::checks::TestMatrix> arbitrary() { return nsv::checks::matrices(); }
};
}  // namespace rc
