#pragma once
// rank_buffers(): what tp ranks contribute to one all-reduce, drawn so that the order of the
// additions matters: magnitudes spread over 2^-24..2^24 (a small term vanishes next to a large
// one in one order and survives in another), exact cancellations (one rank holds the negation
// of another's element), and values a half-ulp apart around 1. Every value is representable in
// the wire dtype (as a real 16-bit buffer is), rounded through Eigen's own bfloat16/half.
#include <rapidcheck.h>

#include <Eigen/Core>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <tuple>
#include <vector>

#include "nsv/dtype.hpp"

namespace nsv::checks {

struct RankBuffers {
  int tp = 2;
  int rows = 1, cols = 1;
  DType wire = DType::fp32;
  std::vector<std::vector<double>> values;  // values[rank][row-major element]
};

// A value of dtype d held in a double, rounded by Eigen (not by nsv's round_to).
inline double representable_in(DType d, double v) {
  if (d == DType::fp64) return v;
  const float f = static_cast<float>(v);
  if (d == DType::bf16) return static_cast<double>(static_cast<float>(Eigen::bfloat16(f)));
  if (d == DType::fp16) return static_cast<double>(static_cast<float>(Eigen::half(f)));
  return static_cast<double>(f);
}

inline rc::Gen<double> order_sensitive_values() {
  // sign * 2^e * (1 + m/8): a few significand bits, so sums of terms far apart lose bits.
  auto spread = rc::gen::map(rc::gen::tuple(rc::gen::arbitrary<bool>(), rc::gen::inRange(-24, 25), rc::gen::inRange(0, 8)),
                             [](const std::tuple<bool, int, int>& t) {
                               const double v = std::ldexp(1.0 + std::get<2>(t) / 8.0, std::get<1>(t));
                               return std::get<0>(t) ? -v : v;
                             });
  // Around 1: 1 + k*2^-24 and small terms of about an fp32 ulp of 1.
  auto near_one = rc::gen::element(1.0, -1.0, 1.0 + 0x1p-23, 0x1p-24, -0x1p-24, 0x1.8p-24, 0x1p-9, 3.0, -0.0, 0.0);
  return rc::gen::weightedOneOf<double>({{3, spread}, {2, near_one}});
}

// The values of tp ranks' rows x cols buffers on `wire`.
inline rc::Gen<RankBuffers> rank_buffers_shaped(int tp, int rows, int cols, DType wire) {
  const auto n = static_cast<std::size_t>(rows * cols);
  auto buffers = rc::gen::container<std::vector<std::vector<double>>>(
      static_cast<std::size_t>(tp), rc::gen::container<std::vector<double>>(n, order_sensitive_values()));
  // Cancellations: for some elements, rank b's value becomes -(rank a's).
  auto negations = rc::gen::container<std::vector<std::tuple<std::size_t, int, int>>>(
      rc::gen::tuple(rc::gen::inRange<std::size_t>(0, n), rc::gen::inRange(0, tp), rc::gen::inRange(0, tp)));
  return rc::gen::map(rc::gen::pair(buffers, negations), [=](const auto& drawn) {
    RankBuffers b{tp, rows, cols, wire, drawn.first};
    for (const auto& [i, from, to] : drawn.second)
      if (from != to) b.values[static_cast<std::size_t>(to)][i] = -b.values[static_cast<std::size_t>(from)][i];
    for (auto& rank : b.values)
      for (double& v : rank) v = representable_in(wire, v);
    return b;
  });
}

// tp in [min_tp, max_tp]; shapes up to 4 x 9 (element counts below, at and above tp, so ring
// chunks are empty, single and uneven).
inline rc::Gen<RankBuffers> rank_buffers(int min_tp, int max_tp, std::vector<DType> wires) {
  return rc::gen::mapcat(rc::gen::tuple(rc::gen::inRange(min_tp, max_tp + 1), rc::gen::inRange(1, 5), rc::gen::inRange(1, 10),
                                        rc::gen::elementOf(wires)),
                         [](const std::tuple<int, int, int, DType>& shape) {
                           const auto [tp, rows, cols, wire] = shape;
                           return rank_buffers_shaped(tp, rows, cols, wire);
                         });
}

inline void showValue(const RankBuffers& b, std::ostream& os) {
  os << "tp=" << b.tp << " " << b.rows << "x" << b.cols << " wire=" << dtype_name(b.wire) << " (hexfloat, row-major):";
  for (std::size_t r = 0; r < b.values.size(); ++r) {
    os << "\n  rank " << r << ":";
    for (double v : b.values[r]) os << ' ' << std::hexfloat << v << std::defaultfloat;
  }
}

}  // namespace nsv::checks
