#pragma once
// Matrix shapes: square, wide, tall, extreme aspect, 1 x n, n x 1; dimensions biased to powers of
// two and attention head dims, but any length in [1, max] occurs. Every random choice goes
// through rc::gen.
#include <rapidcheck.h>

#include <Eigen/Core>
#include <algorithm>
#include <ostream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "generators/tiers.hpp"

namespace nsv::checks {

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
inline std::vector<Eigen::Index> special_dimensions(Eigen::Index max) {
  std::vector<Eigen::Index> special;
  for (Eigen::Index p = 1; p <= max; p *= 2) special.push_back(p);
  for (Eigen::Index h : {48, 80, 96, 112, 128, 160, 192, 256})  // head dims (64, 128 are powers)
    if (h <= max) special.push_back(h);
  return special;
}
inline rc::Gen<Eigen::Index> dimensions(Eigen::Index max) {
  return rc::gen::weightedOneOf<Eigen::Index>(
      {{1, rc::gen::elementOf(special_dimensions(max))}, {1, rc::gen::inRange<Eigen::Index>(1, max + 1)}});
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

// How often each kind is drawn (weights; the Hypothesis strategies read the same table).
inline constexpr std::pair<ShapeKind, std::size_t> kShapeWeights[] = {
    {ShapeKind::square, 3},       {ShapeKind::wide, 4},       {ShapeKind::tall, 4},          {ShapeKind::extreme_wide, 1},
    {ShapeKind::extreme_tall, 1}, {ShapeKind::row_vector, 1}, {ShapeKind::column_vector, 1}};
// Extreme aspects: a short side in [1, kExtremeShortMax] and a long side of at least kExtremeLongMin (or max).
inline constexpr Eigen::Index kExtremeShortMax = 3, kExtremeLongMin = 24;

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
      return rc::gen::map(rc::gen::pair(rc::gen::inRange<Eigen::Index>(1, kExtremeShortMax + 1),
                                        rc::gen::inRange<Eigen::Index>(std::min(kExtremeLongMin, max), max + 1)),
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

inline constexpr std::size_t shape_weight(ShapeKind kind) {
  for (const auto& [k, weight] : kShapeWeights)
    if (k == kind) return weight;
  return 0;
}

inline rc::Gen<Shape> shapes(Eigen::Index max = max_dim()) {
  const auto drawn = [max](ShapeKind k) { return std::pair{shape_weight(k), shapes_of(k, max)}; };
  return rc::gen::weightedOneOf<Shape>({drawn(ShapeKind::square), drawn(ShapeKind::wide), drawn(ShapeKind::tall),
                                        drawn(ShapeKind::extreme_wide), drawn(ShapeKind::extreme_tall),
                                        drawn(ShapeKind::row_vector), drawn(ShapeKind::column_vector)});
}

inline rc::Gen<Shape> non_square_shapes(Eigen::Index max = max_dim()) {
  const auto drawn = [max](ShapeKind k) { return std::pair{shape_weight(k), shapes_of(k, max)}; };
  return rc::gen::weightedOneOf<Shape>({drawn(ShapeKind::wide), drawn(ShapeKind::tall), drawn(ShapeKind::extreme_wide),
                                        drawn(ShapeKind::extreme_tall), drawn(ShapeKind::row_vector),
                                        drawn(ShapeKind::column_vector)});
}

}  // namespace nsv::checks

namespace rc {
template <>
struct Arbitrary<nsv::checks::Shape> {
  static Gen<nsv::checks::Shape> arbitrary() { return nsv::checks::shapes(); }
};
}  // namespace rc
